"""Timeline search and range at many ranks: every rank's index opened per request (the path before issue
28.1) against the run index (timeline/runindex.py), side by side in one process.

    python bench/bench_timeline_scale.py [--ranks 128,1024] [--work /tmp/bench_timeline_scale] [--repeat 3]

Generates (once, kept under --work) a 16-rank run of the scale tests' shape (tbp_synth DP2 x MP2 x PP4,
4 layers, 1 micro-batch, 2 steps, Paddle's default worker names) and builds its 16 timeline indexes; a run
of N ranks is those 16 indexes, each under N / 16 names (hard links: N files, each opened as its own).
Then per N, best of --repeat, CPU seconds of this process (time.process_time) and wall:

* open: opening all N indexes, the whole-file CRC-32 at every open (before) and verified once per file
  version (now: storage.verified), per index;
* search: `timeline_search` of every rank for a substring matching many events per rank, limit 500 (the
  tab's), and for an exact name: before, open every index and search each (levels.search,
  messages.search_message, as the route did); now, from the run index (open already), counting the
  rank indexes it opens;
* range: `timeline_range` of every rank's whole extent, and of a box over one third of the time on 2
  ranks' first 4 tracks: before, every index opened; now, the run index and the ranks the range cuts;
* build: making the run index from the N indexes (once per set of traces, then read back), its size.

Both paths' answers are compared (the same matches, the same rows) at every N. Prints a Markdown table.
Timings are not asserted anywhere.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tb_paddle_profile import timeline  # noqa: E402
from tb_paddle_profile.timeline import storage  # noqa: E402
from tb_paddle_profile.timeline.runindex import RunIndex, build_run_index  # noqa: E402


@dataclass(frozen=True)
class _Key:
    value: str

    def digest(self) -> str:
        return self.value


@dataclass(frozen=True)
class _File:
    worker: str
    key: _Key
    rank: int = 0


def base_indexes(work: Path) -> list:
    """The 16 generated ranks' index files (made once)."""
    out = work / "base"
    done = sorted(out.glob("r*.tl"))
    if len(done) == 16:
        return done
    run = work / "run16"
    shutil.rmtree(run, ignore_errors=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
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
            "--out",
            str(run),
        ],
        check=True,
        cwd=str(REPO),
    )
    out.mkdir(parents=True, exist_ok=True)
    for i, trace in enumerate(sorted(run.glob("*.paddle_trace.json"))):
        timeline.build_file_index(trace.read_bytes, trace.name, str(out / f"r{i:02d}.tl"))
    shutil.rmtree(run)
    return sorted(out.glob("r*.tl"))


def replicate(work: Path, base: list, n: int) -> list:
    folder = work / f"n{n}"
    paths = [folder / f"rank{i:05d}.tl" for i in range(n)]
    if not all(p.exists() for p in paths):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for i, p in enumerate(paths):
            os.link(base[i % len(base)], p)
    old = time.time() - 3600  # settled files (a file changed in the last 2 s is checked at every open)
    for p in base:
        os.utime(p, (old, old))
    return paths


def best(fn, repeat: int):
    cpu, wall, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        out = fn()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="128,1024")
    ap.add_argument("--work", default="/tmp/bench_timeline_scale")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    base = base_indexes(work)
    probe = timeline.TimelineIndex(str(base[0]))
    counts = {}
    for g in probe.a["ev_name"].tolist():
        counts[g] = counts.get(g, 0) + 1
    exact = probe.names[max(counts, key=counts.get)]
    substring = "gemm" if any("gemm" in n.lower() for n in probe.names) else exact[:4].lower()
    print(
        f"16 distinct ranks, {len(probe.a['ev_start'])} events and {len(probe.names)} names in rank 0, "
        f"index {probe.nbytes / 1e6:.2f} MB; queries: substring {substring!r}, exact {exact!r}",
        flush=True,
    )
    rows = []
    for n in [int(x) for x in a.ranks.split(",")]:
        paths = replicate(work, base, n)
        files = [_File(f"rank{i}", _Key(f"{i:064x}"), i) for i in range(n)]

        def open_all(check_every_time: bool):
            if check_every_time:
                storage.forget_verified()
            return [timeline.TimelineIndex(str(p)) for p in paths]

        open_all(False)  # the page cache and the verified memo warm
        o_before = best(lambda: open_all(True), a.repeat)
        o_now = best(lambda: open_all(False), a.repeat)
        target = work / f"run-{n}.tl"
        b = best(
            lambda: build_run_index(
                str(target), [f.key.digest() for f in files], (timeline.TimelineIndex(str(p)) for p in paths)
            ),
            1,
        )
        ri = RunIndex(str(target))
        opened = []
        cache = {}

        def open_rank(f):
            opened.append(f.worker)
            if f.worker not in cache:
                cache[f.worker] = timeline.TimelineIndex(str(paths[f.rank]))
            return cache[f.worker]

        def old_search(q, ex):
            ranks = list(zip(files, open_all(True)))
            return timeline.search_message(ranks, q, ex, None, 500)

        def new_search(q, ex):
            return timeline.run_search_message(ri, files, q, ex, None, 500, open_rank=open_rank)

        extent = (-(1 << 50), 1 << 50)  # holds every rank whole
        lo, hi = 0, int(probe.end_ns)
        box_ws, box_we = lo + (hi - lo) // 3, lo + 2 * (hi - lo) // 3
        box = {files[1].worker: [0, 1, 2, 3], files[2].worker: [0, 1, 2, 3]}
        whole = {f.worker: None for f in files}

        def old_range(ws, we, tracks):
            return timeline.range_message(list(zip(files, open_all(True))), ws, we, tracks, None)

        def new_range(ws, we, tracks):
            return timeline.run_range_message(ri, files, ws, we, tracks, None, open_rank=open_rank)

        row = {
            "n": n,
            "open_before": o_before[0] / n * 1e3,
            "open_now": o_now[0] / n * 1e3,
            "build": b[1],
            "size": target.stat().st_size / 1e6,
        }
        for label, q, ex in (("sub", substring, False), ("exact", exact, True)):
            before = best(lambda: old_search(q, ex), a.repeat)
            opened.clear()
            now = best(lambda: new_search(q, ex), a.repeat)
            row[f"s_{label}"] = (before[0], now[0], now[1], len(opened) // a.repeat, before[2].total)
            x, y = before[2], now[2]
            assert x.total == y.total and [(m.worker, m.id, m.start_ns) for m in x.matches] == [
                (m.worker, m.id, m.start_ns) for m in y.matches
            ], f"search {q!r} differs at {n} ranks"
        for label, ws, we, tracks in (("whole", extent[0], extent[1], whole), ("box", box_ws, box_we, box)):
            before = best(lambda: old_range(ws, we, tracks), a.repeat)
            opened.clear()
            now = best(lambda: new_range(ws, we, tracks), a.repeat)
            row[f"r_{label}"] = (before[0], now[0], now[1], len(opened) // a.repeat)
            assert [(r.name, r.count, r.overlap_ns) for r in before[2].rows] == [
                (r.name, r.count, r.overlap_ns) for r in now[2].rows
            ], f"range {label} differs at {n} ranks"
        rows.append(row)
        print(f"  {n} ranks done", file=sys.stderr, flush=True)
    print()
    print(
        "| ranks | open ms/index: CRC every open / verified once | search substring: before CPU s / now CPU s (wall s), "
        "ranks opened, ratio | search exact: before / now, opened, ratio | range whole run: before / now, opened, "
        "ratio | range box (2 ranks): before / now, opened, ratio | run index: build s, MB |"
    )
    print("|---:|---|---|---|---|---|---|")
    for r in rows:

        def s(key):
            before, now, wall, op = r[key][:4]
            return f"{before:.3f} / {now:.4f} ({wall:.4f}), {op}, {before / max(now, 1e-6):.0f}×"

        print(
            f"| {r['n']:,} | {r['open_before']:.3f} / {r['open_now']:.3f} | {s('s_sub')} | {s('s_exact')} | "
            f"{s('r_whole')} | {s('r_box')} | {r['build']:.2f}, {r['size']:.1f} |"
        )
    if len(rows) > 1:
        f, l = rows[0], rows[-1]
        grow = l["n"] / f["n"]
        print(
            f"\ngrowth {f['n']:,} → {l['n']:,} ranks ({grow:.0f}× the ranks), CPU time now: "
            + ", ".join(f"{k} {l[k][1] / max(f[k][1], 1e-6):.1f}×" for k in ("s_sub", "s_exact", "r_whole", "r_box"))
        )


if __name__ == "__main__":
    main()
