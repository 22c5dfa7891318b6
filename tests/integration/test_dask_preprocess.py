"""``preprocess --dask`` on a real Dask scheduler and two real worker processes on 127.0.0.1, over a logdir
served by a real S3-compatible server (moto), into a cache in that bucket: a worker killed while it runs a
file's task costs only that file, which another worker finishes; two runs at once parse each file once;
a real ``tensorboard`` started afterwards over the logdir and that cache parses nothing and serves the
summaries of a direct parse. Plus the claims of the cache store on S3 and on a local folder."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.paths import REPO, TESTS
from support.plugin_testlib import GLOO, GPU, SINGLE, PREFIX, free_port, stop, trace_files, wait_for, wait_http

pytest.importorskip("distributed")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from distributed.diagnostics.plugin import WorkerPlugin  # noqa: E402

from tb_paddle_profile.store.cache import CacheKey, CachedResult  # noqa: E402
from tb_paddle_profile.pipeline.dask import PROGRESS_S  # noqa: E402
from tb_paddle_profile.analysis.summarize import summarize_bytes  # noqa: E402
from tb_paddle_profile.v1 import summary_pb2  # noqa: E402

BUCKET = "dask-profiles"
LOGDIR = f"s3://{BUCKET}/job-7/profiler_log"
CACHE = f"s3://{BUCKET}/tbpp-cache"
HELD = "rank1_time_2026_11_29_07_19_39_450925.paddle_trace.json"  # the file whose worker is killed


# ------------------------------------------------------------------ servers


@pytest.fixture(scope="module")
def aws_env(tmp_path_factory):
    """A moto S3 server on 127.0.0.1 and the usual AWS environment pointing at it (nothing from ~/.aws)."""
    port = free_port()
    home = tmp_path_factory.mktemp("dask-moto")
    with open(home / "moto.log", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, 60)
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": str(home / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-creds"),
        }
        yield env
    finally:
        stop(proc)


@pytest.fixture
def s3(aws_env, monkeypatch):
    for k, v in aws_env.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "TB_PADDLE_PROFILE_SIDECAR"):
        monkeypatch.delenv(k, raising=False)
    import fsspec

    fsspec.filesystem("s3").clear_instance_cache()
    client = boto3.client("s3")
    try:
        client.create_bucket(Bucket=BUCKET)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    yield client
    for obj in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=obj["Key"])


def _env(aws_env, **extra) -> dict:
    env = dict(os.environ)
    env.update(aws_env)
    env.pop("TB_PADDLE_PROFILE_SIDECAR", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS), str(TESTS / "integration"), str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Cluster:
    """`dask scheduler` and `dask worker` processes on 127.0.0.1 (no nanny: a killed worker stays dead),
    one thread each; every parse on them is logged (jobs.ENV_PARSE_LOG)."""

    def __init__(self, home: Path, env: dict):
        self.home, self.env = home, env
        self.parse_log = home / "parses.log"
        self.env["TB_PADDLE_PROFILE_PARSE_LOG"] = str(self.parse_log)
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.procs = []
        self.workers = []
        # One worker death while running a file is retried; a second one fails the file (KilledWorker).
        self.env["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] = "1"
        self.procs.append(
            self._start(
                "scheduler",
                ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            )
        )

    def _start(self, name: str, args) -> subprocess.Popen:
        with open(self.home / f"{name}.log", "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", *args], stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.home
            )

    def ensure_workers(self, n: int) -> None:
        """Start workers until `n` are alive, and wait until the scheduler has them."""
        from distributed import Client

        self.workers = [p for p in self.workers if p.poll() is None]
        while len(self.workers) < n:
            i = len(self.procs)
            p = self._start(
                f"worker{i}",
                [
                    "distributed.cli.dask_worker",
                    self.address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--name",
                    f"w{i}",
                    "--host",
                    "127.0.0.1",
                ],
            )
            self.procs.append(p)
            self.workers.append(p)
        with Client(self.address, timeout=60) as c:
            c.wait_for_workers(n, timeout=60)
            wait_for(lambda: len(c.scheduler_info()["workers"]) == n, 30, f"{n} workers")

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                stop(p, timeout=10)


@pytest.fixture(scope="module")
def cluster(aws_env, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("dask-cluster"), _env(aws_env))
    try:
        yield c
    finally:
        c.close()


class HoldFile(WorkerPlugin):
    """On each worker: the task of file `name` announces itself (a file `started-<pid>` in `gates`) and
    waits until `gates/open` exists, so that the test can kill the worker process while it runs the task.
    Later attempts (the gate open) pass straight through."""

    name = "tbpp-hold-file"

    def __init__(self, file_name: str, gates: str):
        self.file_name, self.gates = file_name, gates

    def setup(self, worker):
        from tb_paddle_profile.pipeline import dask_worker

        original, file_name, gates = dask_worker._run, self.file_name, self.gates

        def held(spec):
            if spec.file_name == file_name and not os.path.exists(os.path.join(gates, "open")):
                Path(gates, f"started-{os.getpid()}").write_text(spec.file_name)
                while not os.path.exists(os.path.join(gates, "open")):
                    time.sleep(0.02)
            return original(spec)

        dask_worker._run = held


class KillOnFile(WorkerPlugin):
    """On each worker: the task of file `name` kills its own worker process (SIGKILL), every time."""

    name = "tbpp-kill-on-file"

    def __init__(self, file_name: str):
        self.file_name = file_name

    def setup(self, worker):
        from tb_paddle_profile.pipeline import dask_worker

        original, file_name = dask_worker._run, self.file_name

        def deadly(spec):
            if spec.file_name == file_name:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(spec)

        dask_worker._run = deadly


def _upload(s3, shared_traces) -> dict:
    """Five traces: two gloo ranks, a gzipped GPU rank pair, a single-process run. Key -> bytes."""
    files = {}
    for folder, gz in ((GLOO, False), (GPU, True), (SINGLE, False)):
        for src in trace_files(shared_traces, folder):
            data = gzip.compress(src.read_bytes(), mtime=0) if gz else src.read_bytes()
            key = f"job-7/profiler_log/{folder}/{src.name}{'.gz' if gz else ''}"
            s3.put_object(Bucket=BUCKET, Key=key, Body=data)
            files[key] = data
    return files


def _keys(s3, prefix: str):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def _preprocess(address: str, env: dict, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "preprocess",
            LOGDIR,
            "--dask",
            address,
            "--cache-dir",
            CACHE,
            "-v",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )


def _parses(log: Path) -> list:
    return sorted(log.read_text().split()) if log.exists() else []


# ------------------------------------------------------------------ tests


def test_killed_worker_is_retried_and_tensorboard_then_parses_nothing(s3, aws_env, cluster, shared_traces, tmp_path):
    cluster.ensure_workers(2)
    address, workers, parse_log = cluster.address, cluster.workers, cluster.parse_log
    files = _upload(s3, shared_traces)
    parse_log.unlink(missing_ok=True)
    gates = tmp_path / "gates"
    gates.mkdir()
    from distributed import Client

    with Client(address, timeout=30) as c:
        c.register_plugin(HoldFile(HELD, str(gates)))
        pids = c.run(os.getpid)  # worker address -> process id
    assert sorted(pids.values()) == sorted(p.pid for p in workers)
    try:
        run = _preprocess(address, _env(aws_env))
        started = wait_for(lambda: list(gates.glob("started-*")), 60, "the held file's task to start")
        victim = int(started[0].name.split("-")[1])
        assert victim in pids.values()
        # The other four are parsed by the other worker meanwhile; the held file then keeps the run
        # waiting past a progress interval with nothing finishing (that path is exercised too).
        wait_for(lambda: len(_parses(parse_log)) == 4, 60, "the other files to be parsed")
        time.sleep(PROGRESS_S + 0.5)
        os.kill(victim, signal.SIGKILL)  # the worker process running the held file's task
        next(p for p in workers if p.pid == victim).wait(10)
        (gates / "open").touch()
        out, err = run.communicate(timeout=120)
    finally:
        (gates / "open").touch()
        with Client(address, timeout=30) as c:
            c.unregister_worker_plugin(HoldFile.name)
    assert run.returncode == 0, err
    assert "5 of 5 traces summarized into " + CACHE in out
    assert "1 retried after a worker died" in out, out
    assert "preprocess: 5/5 traces" in err  # the progress line
    # Each file parsed once: the killed worker died before its parse, the other worker parsed it.
    assert _parses(parse_log) == sorted(k.rsplit("/", 1)[1] for k in files)
    # One entry and one digest per trace at the URL, no claim left, nothing written into the logdir.
    assert len(_keys(s3, "tbpp-cache/v2/")) == 5 and len(_keys(s3, "tbpp-cache/digest-v1/")) == 5
    assert _keys(s3, "tbpp-cache/claims/") == []
    assert _keys(s3, "job-7/") == sorted(files)

    # A second run finds everything in the cache: nothing submitted, nothing parsed.
    again = _preprocess(address, _env(aws_env))
    out2, err2 = again.communicate(timeout=60)
    assert again.returncode == 0, err2
    assert "0 parsed" in out2 and "5 already cached" in out2
    assert len(_parses(parse_log)) == 5

    # TensorBoard over the same logdir with the shared cache parses nothing and serves a direct parse.
    tb_log = tmp_path / "tb-parses.log"
    env = _env(aws_env, TB_PADDLE_PROFILE_CACHE=CACHE, TB_PADDLE_PROFILE_WORKERS=1, TB_PADDLE_PROFILE_PARSE_LOG=tb_log)
    port = free_port()
    with open(tmp_path / "tensorboard.log", "wb") as log:
        tb = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tensorboard.main",
                "--logdir",
                LOGDIR,
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
                "--reload_interval",
                "0",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
        )
    base = f"http://127.0.0.1:{port}{PREFIX}"
    try:
        wait_http(f"http://127.0.0.1:{port}/data/plugins_listing", tb, 120)

        def loaded():
            with urllib.request.urlopen(f"{base}/status", timeout=30) as r:
                status = json.loads(r.read())
            return status if len(status["files"]) == 5 and status["counts"] == {"READY": 5} else None

        status = wait_for(loaded, 60, "the plugin to list the five traces READY")
        assert status["stats"].get("parsed", 0) == 0 and status["stats"].get("cache_hits") == 5
        assert all(f["cached"] for f in status["files"])
        for f in status["files"]:
            q = urlencode({"run": f["run"], "worker": f["worker"], "span": f["span"]})
            with urllib.request.urlopen(f"{base}/summary?{q}", timeout=30) as r:
                served = summary_pb2.Summary.FromString(r.read())
            key = f"job-7/profiler_log/{f['run']}/{f['file_name']}"
            assert served == summarize_bytes(files[key], f["file_name"])
        # The cross-rank view of a run comes from the digests the cluster wrote, still with no parse.
        with urllib.request.urlopen(f"{base}/parallel?{urlencode({'run': GLOO, 'span': '0'})}", timeout=60) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"{base}/status", timeout=30) as r:
            assert json.loads(r.read())["stats"].get("parsed", 0) == 0
        assert _parses(tb_log) == []
    finally:
        stop(tb)


def test_two_runs_at_once_parse_each_file_once(s3, aws_env, cluster, shared_traces):
    cluster.ensure_workers(2)  # (the test before killed one)
    address, parse_log = cluster.address, cluster.parse_log
    files = _upload(s3, shared_traces)
    s3.put_object(
        Bucket=BUCKET,
        Key="job-7/profiler_log/junk/rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json",
        Body=b'{"x": 1}',
    )
    parse_log.unlink(missing_ok=True)
    env = _env(aws_env)
    first, second = _preprocess(address, env), _preprocess(address, env)
    (out1, err1), (out2, err2) = first.communicate(timeout=120), second.communicate(timeout=120)
    # The junk file is the file's fault (exit 2, its failure cached once); everything else is done by one run.
    assert first.returncode == 2 and second.returncode == 2, (err1, err2)
    for out, err in ((out1, err1), (out2, err2)):
        assert "5 of 6 traces summarized" in out, err
        assert "not a Paddle trace" in err
    parses = _parses(parse_log)  # (a file that is not JSON is refused before it is counted as a parse)
    assert sorted(set(parses)) == parses  # no file parsed by both runs
    assert set(parses) >= {k.rsplit("/", 1)[1] for k in files}
    said = [int(re.search(r"\((\d+) parsed", out).group(1)) for out in (out1, out2)]
    assert sum(said) == len(files)  # the runs' own accounts add up: each good file parsed by one of them
    assert len(_keys(s3, "tbpp-cache/v2/")) == 6 and _keys(s3, "tbpp-cache/claims/") == []


def test_a_file_claimed_by_another_live_run_is_left_to_it_and_a_lapsed_claim_is_taken(
    s3, aws_env, cluster, shared_traces
):
    cluster.ensure_workers(2)
    files = _upload(s3, shared_traces)
    cluster.parse_log.unlink(missing_ok=True)
    from tb_paddle_profile.store.cache_store import CacheStore
    from tb_paddle_profile.pipeline.discovery import Discovery

    d = Discovery(LOGDIR, interval=None)
    by_name = {f.file_name: f for f in d.scan().files}
    d.stop()
    store = CacheStore(CACHE)
    live, dead = by_name[HELD], by_name[trace_files(shared_traces, SINGLE)[0].name]
    assert store.claim(live.key, "another-run", ttl=600)[0]  # a run on another machine, parsing it now
    assert store.claim(dead.key, "a-dead-run", ttl=60, now=time.time() - 120)[0]  # lapsed a minute ago
    run = _preprocess(cluster.address, _env(aws_env))
    wait_for(lambda: len(_parses(cluster.parse_log)) == 4, 60, "the four other files to be parsed")
    # The other run finishes its file: its entry appears; this run counts it done without parsing it.
    summary = summarize_bytes(files[f"job-7/profiler_log/{GLOO}/{HELD}"], HELD).SerializeToString()
    store.write(live.key, CachedResult(True, summary, ""))
    store.release(live.key, "another-run")
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert "5 of 5 traces summarized" in out and "4 parsed" in out and "1 by another run" in out, out
    assert HELD not in _parses(cluster.parse_log) and dead.file_name in _parses(cluster.parse_log)
    assert _keys(s3, "tbpp-cache/claims/") == []


def test_a_file_that_kills_its_workers_is_failed_after_the_bound(s3, aws_env, cluster, shared_traces):
    cluster.ensure_workers(2)
    good = trace_files(shared_traces, GLOO)[0]
    deadly = trace_files(shared_traces, GPU)[0]
    s3.put_object(Bucket=BUCKET, Key=f"job-7/profiler_log/a/{good.name}", Body=good.read_bytes())
    s3.put_object(Bucket=BUCKET, Key=f"job-7/profiler_log/b/{deadly.name}", Body=deadly.read_bytes())
    from distributed import Client

    with Client(cluster.address, timeout=30) as c:
        c.register_plugin(KillOnFile(deadly.name))
    try:
        run = _preprocess(cluster.address, _env(aws_env))
        out, err = run.communicate(timeout=120)
    finally:
        with Client(cluster.address, timeout=30) as c:
            c.unregister_worker_plugin(KillOnFile.name)
    assert run.returncode == 2, err
    assert "1 of 2 traces summarized" in out
    line = next(x for x in err.splitlines() if x.startswith("error:"))
    assert deadly.name in line and "died" in line and "not retried further" in line
    assert all(p.poll() is not None for p in cluster.workers)  # both workers it reached were killed
    assert len(_keys(s3, "tbpp-cache/v2/")) == 1  # the good file; the deadly one is not cached as failed
    assert _keys(s3, "tbpp-cache/claims/") == []


@pytest.mark.parametrize("where", ["s3", "local"])
def test_claims_are_exclusive_expire_and_are_retaken_by_their_owner(where, s3, tmp_path):
    from tb_paddle_profile.store.cache_store import CacheStore

    store = CacheStore(f"s3://{BUCKET}/claims-test" if where == "s3" else str(tmp_path / "cache"))
    key = CacheKey("s3://b/rank0.paddle_trace.json", 123, "etag-1")
    held, claim = store.claim(key, "run-a", ttl=60)
    assert held and claim["attempt"] == 1
    held_b, seen = store.claim(key, "run-b", ttl=60)
    assert not held_b and seen["owner"] == "run-a"  # exclusive while it lives
    again, claim = store.claim(key, "run-a", ttl=60)  # a's task retried after its worker died
    assert again and claim["attempt"] == 2
    later, claim = store.claim(key, "run-b", ttl=60, now=time.time() + 61)  # a's claim lapsed
    assert later and claim["owner"] == "run-b"
    store.release(key, "run-a")  # not a's any more: kept
    assert store.read_claim(key)["owner"] == "run-b"
    store.release(key, "run-b")
    assert store.read_claim(key) is None

    # Entries: written whole, read back with the local cache's checks; a damaged one is a miss.
    assert store.head(key) is None
    store.write(key, CachedResult(True, b"summary-bytes", ""))
    assert store.read(key) == CachedResult(True, b"summary-bytes", "")
    assert store.head(key) == CachedResult(True, b"", "")
    assert store.heads([key, CacheKey("s3://b/other", 1, "x")]) == {key: CachedResult(True, b"", "")}
    other_version = CacheKey(key.source, key.size, "etag-2")
    assert store.read(other_version) is None
    blob = store.fs.cat_file(store.entry_path(key))
    store.fs.pipe_file(store.entry_path(key), blob[:-3] + b"xyz")  # flipped body bytes
    assert store.read(key) is None
    store.fs.pipe_file(store.entry_path(key), blob[:-1])  # cut short
    assert store.head(key) is None and store.read(key) is None


def test_local_cluster_fills_a_folder_cache_that_plain_preprocess_then_finds_whole(tmp_path, shared_traces):
    logdir = tmp_path / "logdir"
    for src in trace_files(shared_traces, GLOO) + trace_files(shared_traces, GPU):
        (logdir / src.parent.name).mkdir(parents=True, exist_ok=True)
        (logdir / src.parent.name / src.name).write_bytes(src.read_bytes())
    cache, parse_log = tmp_path / "cache", tmp_path / "parses.log"
    env = dict(os.environ, TB_PADDLE_PROFILE_PARSE_LOG=str(parse_log))
    env.pop("TB_PADDLE_PROFILE_SIDECAR", None)

    def preprocess(*extra):
        return subprocess.run(
            [sys.executable, "-m", "tb_paddle_profile", "preprocess", str(logdir), "--cache-dir", str(cache), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    first = preprocess("--dask", "local:1")
    assert first.returncode == 0, first.stderr
    assert "4 of 4 traces summarized" in first.stdout and len(_parses(parse_log)) == 4
    indexes = sorted((cache / "timeline-v3").rglob("*.tl"))
    assert len(indexes) == 4
    indexes[0].unlink()  # one timeline index lost: only that file's job runs again
    second = preprocess("--dask", "local:1")
    assert second.returncode == 0, second.stderr
    assert "1 parsed" in second.stdout and "3 already cached" in second.stdout and len(_parses(parse_log)) == 5
    # The project's own preprocess (the plugin's loader) finds every entry and index: it parses nothing.
    plain = preprocess("-v")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.count(": cached") == 4 and len(_parses(parse_log)) == 5
    assert not list(cache.rglob("*.claim"))
