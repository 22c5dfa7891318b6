"""Many users at once: N clients on 127.0.0.1 against a real `tensorboard` process over a preprocessed run.

    python bench/bench_server.py [--ranks 128] [--clients 50] [--seconds 30] [--work /tmp/bench_server]

Generates (once, kept under --work) a run of --ranks ranks of the scale tests' shape (tbp_synth DP N/8 x
MP2 x PP4, 4 layers, 1 micro-batch, 2 steps) and fills a cache for it with `tb-paddle-profile preprocess`
(summaries, digests, timeline indexes). Then it starts `tensorboard` on that cache (a fresh process: what
is measured first is a restart) and, in order:

1. **first requests after the restart**, one at a time: `parallel` (the analysis read back, or made),
   `whatif` (read back from the analysis's store, or computed), `timeline_search` (builds the run
   index the first time, reads it back after), `distributed`;
2. **the mixed load**: --clients threads, each with its own connection per request, for --seconds,
   each request drawn at random: 70 % cached routes (the run list, one random rank's `summary`,
   `distributed?part=summary`, `parallel?part=summary`, a `timeline` window of the first page of
   ranks, `parallel_matched` of a random rank) and 30 % heavy ones (`timeline_search` of every rank for
   a random name of the run, `timeline_range` over a random third of the time on 2 ranks or the whole
   run, `whatif` with one of three MFU inputs: each is computed by its first request, a `timeline` window of
   a random tenth of the time). A request not answered
   in --timeout seconds, an exception or a status other than 200 counts as an error (a 503 "busy" too);
3. the server's RSS (TensorBoard's process, and with its worker processes), sampled every 0.5 s.

Between 1 and 2, each heavy request alone, --cpu-repeat times: the CPU seconds of TensorBoard's process tree
(its worker processes included, from /proc) and the wall time per request. --ramp spreads the clients'
arrival over that many seconds (0: all at once, on a server just restarted). The cached answers slower than
0.5 s are listed with when they were asked (seconds into the load).

Prints p50 / p99 / max latency per class and per route, requests per second, errors and RSS. Timings
are not asserted anywhere.
"""

from __future__ import annotations

import argparse
import gzip
import os
import http.client
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "integration"))  # test_tensorboard_e2e.descendants

from tb_paddle_profile.v1 import plugin_pb2, timeline_pb2  # noqa: E402

PREFIX = "/data/plugin/paddle_profile/"


def prepare(work: Path, ranks: int) -> tuple:
    logdir, cache = work / f"logdir{ranks}", work / f"cache{ranks}"
    done = work / f"ready{ranks}"
    if done.exists():
        return logdir, cache
    shutil.rmtree(logdir, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            str(max(1, ranks // 8)),
            "--mp",
            "2",
            "--pp",
            "4",
            "--layers",
            "4",
            "--micro-batches",
            "1",
            "--steps",
            "2",
            "--quiet",
            "--jobs",
            "2",
            "--out",
            str(logdir / "run"),
        ],
        check=True,
        cwd=str(REPO),
    )
    for extra in (logdir / "run").glob("*.json"):
        if not extra.name.endswith(".paddle_trace.json"):
            extra.unlink()
    g = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "preprocess", str(logdir), "--cache-dir", str(cache)],
        check=True,
        cwd=str(REPO),
        capture_output=True,
    )
    print(
        f"  generated {ranks} ranks in {g - t:.0f} s, preprocessed in {time.perf_counter() - g:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    done.write_text("")
    return logdir, cache


def rss_mb(pid: int, children: bool) -> float:
    pids = [pid]
    if children:
        from test_tensorboard_e2e import descendants

        pids += list(descendants(pid))
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its descendants (TensorBoard, its forkserver and workers)."""
    from test_tensorboard_e2e import descendants

    ticks = 0
    for p in [pid, *descendants(pid)]:
        try:
            with open(f"/proc/{p}/stat") as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


class Client:
    def __init__(self, port: int, timeout: float):
        self.port, self.timeout = port, timeout

    def get(self, route: str, **params) -> tuple:
        """(status, body, seconds); status -1 for a timeout or a connection error."""
        t = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            conn.request(
                "GET", PREFIX + route + ("?" + urlencode(params) if params else ""), headers={"Accept-Encoding": "gzip"}
            )
            r = conn.getresponse()
            body = r.read()
            if r.getheader("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            status = r.status
        except (OSError, http.client.HTTPException):
            status, body = -1, b""
        finally:
            conn.close()
        return status, body, time.perf_counter() - t

    def ready(self, route: str, limit: float = 600, **params) -> tuple:
        deadline = time.monotonic() + limit
        while True:
            status, body, dt = self.get(route, **params)
            if status != 202 or time.monotonic() > deadline:
                return status, body, dt
            time.sleep(0.5)


def pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=128)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--work", default="/tmp/bench_server")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu-repeat", type=int, default=10, help="requests of each heavy kind timed one at a time")
    ap.add_argument("--ramp", type=float, default=0.0, help="seconds over which the clients arrive (0: all at once)")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    logdir, cache = prepare(work, a.ranks)
    from support.plugin_testlib import tensorboard_process

    tbwork = work / "tb"
    tbwork.mkdir(exist_ok=True)
    env = {"TB_PADDLE_PROFILE_CACHE": str(cache)}
    with tensorboard_process(logdir, env, tbwork, 300) as (base, proc, log):
        port = int(base.rsplit(":", 1)[1])
        c = Client(port, a.timeout)
        t = time.perf_counter()
        while True:
            status, body, _ = c.get("runs")
            rl = plugin_pb2.RunList.FromString(body) if status == 200 else None
            states = [s.state for r in rl.runs for w in r.workers for s in w.spans] if rl else []
            if len(states) == a.ranks and all(s == plugin_pb2.READY for s in states):
                break
            if time.perf_counter() - t > 600:
                raise SystemExit(f"not loaded: {len(states)} of {a.ranks}")
            time.sleep(0.5)
        print(
            f"{a.ranks} ranks READY {time.perf_counter() - t:.1f} s after TensorBoard answered "
            f"(from the cache; RSS {rss_mb(proc.pid, False):.0f} MB)",
            flush=True,
        )
        workers = [w.worker for w in rl.runs[0].workers]
        run = rl.runs[0].run
        first = {}
        for route, params in (
            ("parallel", {}),
            ("whatif", {}),
            ("timeline_search", {"q": "ProfileStep", "limit": 500}),
            ("timeline_search", {"q": "nccl", "limit": 500}),
            ("distributed", {}),
        ):
            status, body, dt = c.ready(route, run=run, span="0", **params)
            first[f"{route} {params.get('q', '')}".strip()] = (status, dt)
        print("\nfirst requests after the restart, one at a time:")
        print("| request | status | s |\n|---|---:|---:|")
        for k, (status, dt) in first.items():
            print(f"| {k} | {status} | {dt:.3f} |")
        _, body, _ = c.get("timeline", run=run, span="0", px=1000)
        win = timeline_pb2.TimelineWindow.FromString(body)
        names = sorted({n for n in win.names if n and not n.startswith("merged")})[:200] or ["ProfileStep"]
        lo, hi = int(win.range_start_ns), int(win.range_end_ns)

        # The heavy requests one at a time: the server's CPU per request (TensorBoard's process tree)
        mid = lo + (hi - lo) // 3
        two = ",".join(f"{w}:{t}" for w in workers[:2] for t in range(4))
        print(
            f"\nheavy requests one at a time, {a.cpu_repeat} of each: server CPU per request (TensorBoard "
            "and its worker processes) and wall"
        )
        print("| request | status | CPU ms | wall ms |\n|---|---:|---:|---:|")
        for label, route, params in (
            ("timeline_search (a name's first 12 characters)", "timeline_search", {"q": names[0][:12], "limit": 500}),
            ("timeline_search nccl", "timeline_search", {"q": "nccl", "limit": 500}),
            (
                "timeline_range, every rank whole",
                "timeline_range",
                {"start_ns": lo - (hi - lo), "end_ns": hi + (hi - lo)},
            ),
            (
                "timeline_range, the first page's extent (cuts the ranks ending later)",
                "timeline_range",
                {"start_ns": lo - 1, "end_ns": hi + 1},
            ),
            (
                "timeline_range, a third on 2 ranks",
                "timeline_range",
                {"start_ns": mid, "end_ns": mid + (hi - lo) // 3, "tracks": two},
            ),
            (
                "timeline, a tenth of the span (first page)",
                "timeline",
                {"px": 1000, "start_ns": mid, "end_ns": mid + (hi - lo) // 10},
            ),
        ):
            c.get(route, run=run, span="0", **params)  # (once before: its indexes opened)
            cpu, t = tree_cpu(proc.pid), time.perf_counter()
            for _ in range(a.cpu_repeat):
                status, _, _ = c.get(route, run=run, span="0", **params)
            cpu, t = (tree_cpu(proc.pid) - cpu) / a.cpu_repeat, (time.perf_counter() - t) / a.cpu_repeat
            print(f"| {label} | {status} | {cpu * 1e3:.0f} | {t * 1e3:.0f} |", flush=True)

        def cached(rng):
            w = rng.choice(workers)
            return rng.choice(
                [
                    ("runs", {}),
                    ("summary", {"run": run, "worker": w, "span": "0"}),
                    ("distributed", {"run": run, "span": "0", "part": "summary"}),
                    ("parallel", {"run": run, "span": "0", "part": "summary"}),
                    ("timeline", {"run": run, "span": "0", "px": 1000}),
                    ("parallel_matched", {"run": run, "span": "0", "rank": workers.index(w), "limit": 50}),
                ]
            )

        def heavy(rng):
            kind = rng.randrange(4)
            if kind == 3:  # a window zoomed to (one user's: not memoized)
                s = rng.randrange(lo, max(lo + 1, hi - (hi - lo) // 10))
                return ("timeline", {"run": run, "span": "0", "px": 1000, "start_ns": s, "end_ns": s + (hi - lo) // 10})
            if kind == 0:
                return ("timeline_search", {"run": run, "span": "0", "q": rng.choice(names)[:12], "limit": 500})
            if kind == 1:
                if rng.random() < 0.5:
                    return ("timeline_range", {"run": run, "span": "0", "start_ns": lo - 1, "end_ns": hi + 1})
                s = rng.randrange(lo, max(lo + 1, hi - (hi - lo) // 3))
                two = rng.sample(workers, 2)
                return (
                    "timeline_range",
                    {
                        "run": run,
                        "span": "0",
                        "start_ns": s,
                        "end_ns": s + (hi - lo) // 3,
                        "tracks": ",".join(f"{w}:{t}" for w in two for t in range(4)),
                    },
                )
            # the same few MFU inputs (users of one run), the first request of each computes it
            return (
                "whatif",
                {
                    "run": run,
                    "span": "0",
                    "params": rng.choice([1e9, 7e9, 13e9]),
                    "tokens_per_step": 4096,
                    "peak_tflops": 312,
                },
            )

        results = []  # (class, route, status, seconds)
        lock = threading.Lock()
        stop_at = time.monotonic() + a.seconds
        rss = [0.0, 0.0]
        running = [True]

        def sample():
            while running[0]:
                rss[0] = max(rss[0], rss_mb(proc.pid, False))
                rss[1] = max(rss[1], rss_mb(proc.pid, True))
                time.sleep(0.5)

        def client(i):
            rng = random.Random(a.seed * 1000 + i)
            mine = []
            time.sleep(a.ramp * i / max(1, a.clients))  # the clients arrive over --ramp seconds
            while time.monotonic() < stop_at:
                cls = "heavy" if rng.random() < 0.3 else "cached"
                route, params = heavy(rng) if cls == "heavy" else cached(rng)
                at = time.perf_counter() - t0
                status, _, dt = c.get(route, **params)
                mine.append((cls, route, status, dt, at))
            with lock:
                results.extend(mine)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - t0
        running[0] = False
        sampler.join()
        print(
            f"\nmixed load: {a.clients} clients for {a.seconds:.0f} s ({elapsed:.1f} s until the last answer), "
            f"{len(results)} requests, {len(results) / elapsed:.1f} req/s; server RSS max {rss[0]:.0f} MB "
            f"(with its workers {rss[1]:.0f} MB)"
        )
        print("| class / route | requests | errors | p50 s | p99 s | max s |\n|---|---:|---:|---:|---:|---:|")
        groups = {}
        for cls, route, status, dt, _ in results:
            for key in (cls, f"{cls}: {route}"):
                groups.setdefault(key, []).append((status, dt))
        for key in sorted(groups, key=lambda k: (k.split(":")[0], ":" in k, k)):
            g = groups[key]
            times = [dt for _, dt in g]
            errors = sum(1 for s, _ in g if s != 200)
            print(
                f"| {key} | {len(g)} | {errors} | {pct(times, 0.5):.3f} | {pct(times, 0.99):.3f} | {max(times):.3f} |"
            )
        codes = (
            statistics.multimode([s for _, _, s, _, _ in results if s != 200])
            if any(s != 200 for _, _, s, _, _ in results)
            else []
        )
        if codes:
            print(f"\nmost frequent error status: {codes}")
        slow = sorted((at, dt, route) for cls, route, _, dt, at in results if cls == "cached" and dt > 0.5)
        if slow:  # when the slow cached answers were asked for: all at once (a stall) or spread out
            print(
                f"\ncached answers over 0.5 s: {len(slow)}, asked at (s into the load): "
                + ", ".join(f"{at:.1f} ({dt:.2f} s {route})" for at, dt, route in slow[:40])
            )


if __name__ == "__main__":
    main()
