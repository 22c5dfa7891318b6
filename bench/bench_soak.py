#!/usr/bin/env python3
"""Soak: many small traces and many clients against a real TensorBoard, its memory sampled throughout.

    python bench/bench_soak.py                      # 100,000 files, 50 clients (the issue's soak)
    python bench/bench_soak.py --files 20000 --clients 50 --after 60

Writes ``--files`` tiny Paddle traces (one ProfileStep and a few operators each, ~1.3 kB) into runs of
1,000 ranks, starts ``tensorboard --logdir`` on 127.0.0.1 (a cache folder of its own, sidecars off),
and while the plugin lists and loads them runs ``--clients`` threads that loop over the cheap routes a
tab asks for (``runs``, one rank's ``summary`` and ``display``, a run's ``distributed``
summary; ``status?files=0``, the counts without the list of files, once per sample). Every ``--sample`` seconds it prints the files loaded, requests answered, errors, and the
resident memory of the server's process tree (TensorBoard and its worker processes), then runs
``--after`` seconds more once every file is loaded. The last line says how memory grew: the peak
against the first sample after the scan, and the last sample against the one when loading ended.

Nothing is asserted: it prints what it measured (docs/benchmarks.md quotes it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

RUN_SIZE = 1000


def tiny_trace(rank: int, pid: int) -> bytes:
    """A small trace in Paddle 3.x's shape: a ProfileStep with three operators on the main thread."""
    base = 1_795_944_547_421_883 + rank * 7
    tid = f"{pid}(Python)"
    ctid = f"{pid}(C++)"
    events = [
        {"name": "process_name", "pid": pid, "tid": tid, "ph": "M", "args": {"name": f"Process {pid} (CPU)"}},
        {
            "name": "thread_name",
            "pid": pid,
            "tid": tid,
            "ph": "M",
            "args": {"name": f"thread {pid}:MainThread(Python)"},
        },
        {
            "name": "ProfileStep#1[1.000 ms]",
            "pid": pid,
            "tid": tid,
            "ts": base,
            "dur": 1000.0,
            "ph": "X",
            "cat": "ProfileStep",
            "args": {"start_time": "0.000 us", "end_time": "1000.000 us"},
        },
    ]
    for i, name in enumerate(("matmul", "add", "relu")):
        start = 100.0 + i * 250.0
        events.append(
            {
                "name": f"{name} dygraph[200.000 us]",
                "pid": pid,
                "tid": ctid,
                "ts": base + int(start),
                "dur": 200.0,
                "ph": "X",
                "cat": "Operator",
                "args": {
                    "start_time": f"{start:.3f} us",
                    "end_time": f"{start + 200.0:.3f} us",
                    "input_shapes": {},
                    "input_dtypes": {},
                    "callstack": "",
                },
            }
        )
    doc = {
        "displayTimeUnit": "ms",
        "schemaVersion": "1.0.2",
        "span_index": 0,
        "ExtraInfo": {str(pid): "MainThread"},
        "traceEvents": events,
    }
    return json.dumps(doc).encode()


def write_logdir(root: Path, files: int) -> list:
    """The files in runs of RUN_SIZE ranks; [(run, worker)] of every one."""
    out = []
    for i in range(files):
        run, rank = f"run{i // RUN_SIZE:03d}", i % RUN_SIZE
        folder = root / run
        if rank == 0:
            folder.mkdir(parents=True, exist_ok=True)
        worker = f"rank{rank}"
        (folder / f"{worker}_time_2026_12_02_10_00_00_{rank:06d}.paddle_trace.json").write_bytes(
            tiny_trace(rank, 1000 + rank)
        )
        out.append((run, worker))
    return out


def tree_rss_mb(pid: int) -> float:
    """Resident memory of the process and its descendants (Linux /proc), MB."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parts = fh.read().rsplit(")", 1)[1].split()
            children.setdefault(int(parts[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            pass
        todo.extend(children.get(p, []))
    return total / 1e6


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Clients:
    def __init__(self, base: str, names: list, n: int):
        self.base, self.names = base + "/data/plugin/paddle_profile/", names
        self.ok = self.errors = 0
        self.error_kinds: dict = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.loop, args=(i,), daemon=True) for i in range(n)]

    def get(self, path: str, **params) -> None:
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                r.read()
                good = r.status in (200, 202)
        except urllib.error.HTTPError as e:
            good = e.code in (202, 404)  # 404: a run not listed by the scan yet
            kind = f"HTTP {e.code}"
        except Exception as e:  # noqa: BLE001 - every failure is counted and named
            good, kind = False, type(e).__name__
        with self.lock:
            if good:
                self.ok += 1
            else:
                self.errors += 1
                self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1

    def loop(self, i: int) -> None:
        rnd = random.Random(i)
        while not self.stop.is_set():
            run, worker = rnd.choice(self.names)
            pick = rnd.random()
            if pick < 0.3:
                self.get("runs")
            elif pick < 0.7:
                self.get("summary", run=run, worker=worker, span="0")
            elif pick < 0.9:
                self.get("display", run=run, worker=worker, span="0", view="overview")
            else:
                self.get("distributed", run=run, span="0", part="summary")


def loaded(base: str) -> tuple:
    try:
        with urllib.request.urlopen(base + "/data/plugin/paddle_profile/status?files=0", timeout=60) as r:
            body = json.loads(r.read())
    except Exception:  # noqa: BLE001 - not up yet
        return 0, 0
    counts = body.get("counts") or {}
    return int(counts.get("READY", 0)) + int(counts.get("FAILED", 0)), int(sum(counts.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--after", type=float, default=60.0, help="seconds to go on once every file is loaded")
    ap.add_argument("--limit", type=float, default=3600.0, help="give up after this many seconds")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tbpp_soak_"))
    try:
        t0 = time.time()
        names = write_logdir(work / "logs", args.files)
        print(
            f"wrote {args.files} traces in {time.time() - t0:.1f}s "
            f"({sum(f.stat().st_size for f in (work / 'logs').rglob('*.json')) / 1e6:.1f} MB)",
            flush=True,
        )
        port = free_port()
        env = dict(os.environ, TB_PADDLE_PROFILE_CACHE=str(work / "cache"))
        env.pop("TB_PADDLE_PROFILE_SIDECAR", None)
        log = open(work / "tensorboard.log", "wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tensorboard.main",
                "--logdir",
                str(work / "logs"),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(work),
        )
        base = f"http://127.0.0.1:{port}"
        clients = Clients(base, names, args.clients)
        samples = []
        try:
            start = time.time()
            while time.time() - start < 120:
                try:
                    urllib.request.urlopen(base + "/data/plugins_listing", timeout=5).read()
                    break
                except Exception:  # noqa: BLE001 - starting
                    time.sleep(0.5)
            for t in clients.threads:
                t.start()
            done_at = None
            print("   s   loaded/total    ok  errors   RSS MB", flush=True)
            while time.time() - start < args.limit:
                time.sleep(args.sample)
                ready, total = loaded(base)
                rss = tree_rss_mb(proc.pid)
                samples.append((time.time() - start, ready, total, rss))
                print(
                    f"{samples[-1][0]:5.0f}  {ready:>6}/{total:<6}  {clients.ok:>6}  {clients.errors:>5}  {rss:8.1f}",
                    flush=True,
                )
                if done_at is None and total >= args.files and ready >= total:
                    done_at = time.time()
                if done_at is not None and time.time() - done_at >= args.after:
                    break
        finally:
            # the clients finish the request they are in before the server goes: terminated under them, those
            # requests failed as ConnectionReset, RemoteDisconnected or IncompleteRead (counted as errors)
            clients.stop.set()
            for t in clients.threads:
                t.join(timeout=90)
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        scanned = [s for s in samples if s[2] >= args.files]
        if scanned:
            first = scanned[0][3]
            peak = max(s[3] for s in scanned)
            end_load = next((s[3] for s in scanned if s[1] >= s[2]), scanned[-1][3])
            print(
                f"RSS: {first:.0f} MB after the scan, peak {peak:.0f} MB ({peak / first:.2f}x), "
                f"{end_load:.0f} MB when every file was loaded, {scanned[-1][3]:.0f} MB at the end "
                f"({scanned[-1][3] / end_load:.2f}x of that); {clients.ok} answers, {clients.errors} errors "
                f"{clients.error_kinds or ''}",
                flush=True,
            )
        else:
            print("the scan never listed every file within --limit", flush=True)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
