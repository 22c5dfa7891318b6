"""Helpers shared by the plugin's tests: building logdirs from the shared traces, a plugin behind
TensorBoard's own WSGI routing, a fingerprint of a folder tree, free ports and waiting for servers."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, Optional

from werkzeug.test import Client

GLOO = "cpu-gpt-2rank-gloo"
SINGLE = "cpu-gpt-single"
GPU = "gpu-synthetic-2rank"
PREFIX = "/data/plugin/paddle_profile"
OLD = 1_600_000_000  # an mtime long past: a truncated file this old is broken, not growing


def trace_files(shared_traces: Path, folder: str):
    return sorted((shared_traces / folder).glob("*.paddle_trace.json"))


def place(
    src_bytes: bytes,
    dst: Path,
    gz: bool = False,
    span: Optional[str] = None,
    old_key: bool = False,
    mtime: Optional[float] = None,
) -> Path:
    """Write a trace into a logdir, optionally gzipped, with another span number or the 2.x key."""
    data = src_bytes
    if span is not None:
        data = data.replace(b'"span_index": "0"', f'"span_index": "{span}"'.encode(), 1)
    if old_key:
        data = data.replace(b'"span_index"', b'"span_indx"', 1)
    if gz:
        data = gzip.compress(data, mtime=0)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)
    if mtime is not None:
        os.utime(dst, (mtime, mtime))
    return dst


def tree_digest(root: Path) -> Dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too) with its content hash and mtime."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(folder, d), root) + "/"] = "dir"
        for f in files:
            p = os.path.join(folder, f)
            with open(p, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(p, root)] = f"{digest}:{os.stat(p).st_mtime_ns}"
    return out


def tb_context(logdir: str, reload_interval: float = 0.0):
    from tensorboard.plugins import base_plugin

    flags = argparse.Namespace(reload_interval=reload_interval, logdir=logdir)
    return base_plugin.TBContext(logdir=logdir, flags=flags)


def make_plugin(logdir: str):
    """The plugin as TensorBoard builds it, and a test client over TensorBoard's routing of its apps."""
    from tensorboard.backend import application

    from tb_paddle_profile.plugin import PaddleProfilePlugin

    plugin = PaddleProfilePlugin(tb_context(str(logdir)))
    client = Client(application.TensorBoardWSGI([plugin]))
    return plugin, client


@contextlib.contextmanager
def synth_plugin(logdir: Path, cache: Path):
    """(plugin, client) over a generated 8-rank run "gen" (DP2 x MP2 x PP2, Paddle's default worker names,
    skewed clocks) with the cache in ``cache``, every rank loaded; closed after."""
    import pytest
    from tbp_synth import SynthConfig, generate

    generate(
        SynthConfig(
            dp=2, mp=2, pp=2, steps=2, layers=2, micro_batches=2, names="default", gpus_per_node=4, clock_skew_us=2000
        ),
        str(logdir / "gen"),
    )
    for extra in (logdir / "gen").glob("*.json"):
        if not extra.name.endswith(".paddle_trace.json"):
            extra.unlink()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TB_PADDLE_PROFILE_CACHE", str(cache))
        plugin, client = make_plugin(str(logdir))
        try:
            ready(plugin)
            yield plugin, client
        finally:
            plugin.close()
            plugin._routes.close()  # the timeline store, the worker processes


def ready(plugin, timeout: float = 120.0) -> None:
    """Wait for the first scan and for the loader to finish what it has."""
    assert plugin.discovery.wait_first_scan(timeout)
    assert plugin.loader.wait_idle(timeout), plugin.loader.counts()


def settled(client, url: str, tries: int = 300):
    """The answer to ``url`` once it is no 202 (the cross-rank analysis a route computes on the first request)."""
    got = client.get(url)
    for _ in range(tries):
        if got.status_code != 202:
            break
        got = client.get(url)
    return got


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc, timeout: float) -> None:
    """Poll ``url`` until it answers 200 (bounded), failing early if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError as err:
            last = err
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s: {last}")


@contextlib.contextmanager
def tensorboard_process(logdir, env_updates: dict, workdir: Path, timeout: float = 300.0, flag: str = "--logdir"):
    """A real ``tensorboard`` over ``logdir`` (given as ``flag``: ``--logdir_spec`` for a spec) on a free
    port of 127.0.0.1, with ``env_updates`` in its environment (sidecars off unless asked); yields
    (base URL, process, log path); stopped on exit."""
    port = free_port()
    env = dict(os.environ)
    env.pop("TB_PADDLE_PROFILE_SIDECAR", None)
    env.update(env_updates)
    log = workdir / "tensorboard.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", flag, str(logdir), "--port", str(port), "--host", "127.0.0.1"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(workdir),
        )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_http(f"{base}/data/plugins_listing", proc, timeout)
        except AssertionError:
            raise AssertionError(log.read_text()[-3000:])
        yield base, proc, log
    finally:
        stop(proc)


def stop(proc, timeout: float = 30.0) -> None:
    """Ask a server we started to exit (SIGTERM), then kill it if it does not."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------ fault injection (real worker processes)


def wait_for(condition, timeout: float = 60.0, what: str = "condition"):
    """Poll ``condition()`` until it returns something truthy (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def pid_gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this id."""
    return not os.path.exists(f"/proc/{pid}")


try:
    from fsspec.implementations.local import LocalFileSystem as _LocalFileSystem
except ImportError:  # pragma: no cover
    _LocalFileSystem = object


class GateFS(_LocalFileSystem):
    """A local folder seen as a remote store (no links: the loader reads with ``cat_file``) whose
    whole-file reads of a trace wait until the test creates ``<gates>/<file name>``: a worker process
    then stays on that file for as long as the test needs (picklable: rebuilt in the worker)."""

    protocol = ("gatefile",)

    def __init__(self, gates: str, **kwargs):
        super().__init__(**kwargs)
        self.gates = gates

    def cat_file(self, path, start=None, end=None, **kwargs):
        name = os.path.basename(str(path))
        if start is None and end is None and ".paddle_trace.json" in name and not name.endswith(".pb"):
            while not os.path.exists(os.path.join(self.gates, name)):
                time.sleep(0.02)
        return super().cat_file(path, start=start, end=end, **kwargs)


def _buggy_summarize_reader(read, file_name, workers=1):
    read()
    return [][0]  # an IndexError of "our" code, after the bytes were read


def _buggy_summarize_profile(p, file_name, file_size=0):
    return [][0]  # the same bug, on the path of jobs.run_job (one parse for summary and index)


def break_the_engine() -> None:
    """A worker-process initializer that makes the engine fail with a bug of ours (an IndexError)."""
    from tb_paddle_profile.analysis import summarize as engine

    engine.summarize_reader = _buggy_summarize_reader
    engine.summarize_profile = _buggy_summarize_profile


def _oops(*args, **kwargs):
    raise KeyError("oops")


def break_kernel_view() -> None:
    """A worker-process initializer: the Kernel view of the engine fails with a KeyError of ours."""
    from tb_paddle_profile.analysis import summarize as engine

    engine.kernel_view = _oops


def die_at_start() -> None:
    """A worker-process initializer that ends the process before it takes any job (a broken worker
    environment: an import that fails, a library that aborts)."""
    os._exit(3)


def generate_rank(out: Path, events: int, steps: int = 2) -> Path:
    """One generated GPU-shaped rank (the project's generator, DP1 x MP1 x PP1) of about `events`
    events in folder `out`; the trace's path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "1",
            "--mp",
            "1",
            "--pp",
            "1",
            "--steps",
            str(steps),
            "--out",
            str(out),
            "--events-per-rank",
            str(events),
        ],
        check=True,
        capture_output=True,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    return next(Path(out).glob("*.paddle_trace.json"))
