"""`tb-paddle-profile export`: the ranks of one span in ONE Chrome-trace JSON, for Perfetto.

Each rank's own trace is read again and rewritten into the merged file, event for event:

- one process per rank (pid = position in the run's rank order + 1), named by the rank's label
  ("rank 5 · dp1 pp0 mp1 · ..."), sorted by rank number; its host threads and its GPU streams are
  threads of that process, with integer tids and names ("GPU 0 stream 7"), so that ranks sharing a GPU
  number or a pid no longer fall on one track;
- every time on the run's common clock: a rank's times less its host's clock offset
  (RunParallel.ranks[].clock_offset_ns, what the cross-rank analysis measured and the timeline applies),
  counted from ``otherData.ts_base_unix_us`` (a second before the first rank's first event), so that
  the fractions of a microsecond the offsets carry are not lost in the doubles of epoch microseconds;
- launch -> kernel flows: Paddle's own "s"/"f" pairs, their ids made unique per rank; a trace without
  them gets one pair per CUDA runtime call and device event sharing a correlation id;
- memory: Paddle's "[memory]" instants kept, and a counter track per place (allocated and reserved bytes)
  drawn from them;
- collectives: each instance the cross-rank analysis matched (RunParallel.matched) whose members include
  two or more of the chosen ranks is one chain of flow events (category ``collective``, named by its
  kind and step) through its members' slices in rank order, senders before receivers for send/recv:
  Perfetto draws an arrow from each member to the next. A member's slice is its event that starts
  where the analysis says (within 2 µs of ``start_unix_ns``: the file's ts is rounded, a GPU stream's first); a member
  with no such event is left out of its chain.

Metadata of the sources (their process names and sort indexes) is replaced; nothing else is dropped
or computed: the events of rank r in the merged file are the events of r's trace.
"""

from __future__ import annotations

import gzip
import json
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

import numpy as np

HOST_TID0 = 1
DEVICE_TID0 = 100_000  # device streams: DEVICE_TID0 + device * 1000 + stream
FLOW_ID_STRIDE = 1 << 32  # a rank's flow ids: position * stride + its own id
COLLECTIVE_FLOW_ID0 = 1 << 62  # collective chains: this + the instance's index (above any rank's ids)
KIND_NAMES = {
    1: "all_reduce",
    2: "all_gather",
    3: "reduce_scatter",
    4: "broadcast",
    5: "send_recv",
    6: "all_to_all",
    7: "other",
}  # CollectiveKind
EVENT_PHASES = ("X", "i", "I", "s", "f", "t", "B", "E", "C", "b", "e", "n")


def parse_ranks(text: Optional[str]) -> Optional[Set[int]]:
    """ "0,2,4-7" -> {0, 2, 4, 5, 6, 7}; None for all. ValueError naming the bad part."""
    if not text:
        return None
    out: Set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.update(range(int(lo), int(hi) + 1))
            elif part:
                out.add(int(part))
        except ValueError:
            raise ValueError(f"--ranks {text!r}: {part!r} is not a rank number or a range a-b") from None
    return out


def _read(f) -> dict:
    """A rank's trace (a TraceFile the run was analysed from) as the reader takes it: opened under the
    logdir's path policy, a .gz inflated within the reader's bound (counted in bytes inflated, never
    whole: a file swapped for a gzip bomb keeping its size and time fails with one line). ValueError
    (one line naming the file) for a file that changed since it was read, or is not a Chrome trace."""
    import fsspec

    from tb_paddle_profile.core.errors import TraceError
    from tb_paddle_profile.core.paths import read_checked
    from tb_paddle_profile.trace.reader import json_bytes

    try:
        raw = read_checked(fsspec.filesystem("file"), f.path, f.root or None, f.file_name)
        if len(raw) != f.size:
            raise TraceError(f.file_name, "changed since the run was read: run the command again")
        data = json.loads(json_bytes(raw, f.file_name))
    except TraceError as err:
        raise ValueError(str(err)) from None
    except RecursionError:
        raise ValueError(f"{f.file_name}: JSON nested too deeply") from None
    except ValueError as err:  # json's own error names no file
        raise ValueError(f"{f.file_name}: not JSON ({' '.join(str(err).split())})") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{f.file_name}: not a Chrome trace (no traceEvents list)")
    return data


def _is_device(ev: dict, host_pids: Set[object]) -> bool:
    return ev.get("pid") not in host_pids and isinstance(ev.get("tid"), int) and isinstance(ev.get("pid"), int)


class _RankWriter:
    """The rewriting of one rank's events (see the module's docstring)."""

    def __init__(self, position: int, label: str, rank: int, offset_ns: int, base_us: int):
        self.pid = position + 1
        self.position, self.label, self.rank = position, label, rank
        self.shift_us = offset_ns / 1000.0
        self.base_us = base_us
        self.tids: Dict[Tuple[object, object], int] = {}
        self.names: Dict[int, str] = {}
        self.events = self.flows = 0
        self.slices: List[Tuple[float, float, int, bool]] = []  # (source ts µs, dur µs, new tid, device)

    def _tid(self, ev: dict, device: bool) -> int:
        key = (ev.get("pid"), ev.get("tid"))
        tid = self.tids.get(key)
        if tid is None:
            if device:
                tid = DEVICE_TID0 + int(ev["pid"]) * 1000 + int(ev["tid"])
                self.names[tid] = f"GPU {ev['pid']} stream {ev['tid']}"
            else:
                tid = HOST_TID0 + sum(1 for t in self.tids.values() if t < DEVICE_TID0)
                self.names.setdefault(tid, f"thread {ev.get('tid')}")
            self.tids[key] = tid
        return tid

    def rewrite(self, data: dict) -> List[dict]:
        src = [e for e in data["traceEvents"] if isinstance(e, dict) and e]
        host_pids = {e.get("pid") for e in src if isinstance(e.get("tid"), str)}
        host_pids |= {e.get("pid") for e in src if e.get("cat") in ("CudaRuntime", "Operator", "ProfileStep")}
        thread_names = {
            (e.get("pid"), e.get("tid")): (e.get("args") or {}).get("name")
            for e in src
            if e.get("ph") == "M" and e.get("name") == "thread_name"
        }
        out: List[dict] = []
        has_flows = any(e.get("ph") in ("s", "f") for e in src)
        launches: Dict[Any, dict] = {}  # correlation id (a JSON value) → its launch
        flow_ends: Dict[int, Set[str]] = {}
        device_by_corr: Dict[Any, dict] = {}
        for ev in src:
            ph = ev.get("ph")
            if ph not in EVENT_PHASES:
                continue  # metadata: replaced below
            device = _is_device(ev, host_pids)
            new = dict(ev)
            new["pid"], new["tid"] = self.pid, self._tid(ev, device)
            if "ts" in new:
                new["ts"] = (ev["ts"] - self.base_us) - self.shift_us
            if ph in ("s", "f", "t") and "id" in new:
                new["id"] = self.position * FLOW_ID_STRIDE + int(new["id"])
                flow_ends.setdefault(new["id"], set()).add(ph)
            if ph in ("i", "I"):
                new.setdefault("s", "t")
            if ph == "X" and isinstance(ev.get("ts"), (int, float)):
                self.slices.append((float(ev["ts"]), float(ev.get("dur") or 0.0), new["tid"], device))
            out.append(new)
            self.events += 1
            corr = (ev.get("args") or {}).get("correlation id") if ph == "X" else None
            if corr is not None and not has_flows:
                (device_by_corr if device else launches).setdefault(corr, new)
        self.flows = sum(1 for ends in flow_ends.values() if {"s", "f"} <= ends)
        for key, tid in self.tids.items():
            name = thread_names.get(key)
            if name and tid < DEVICE_TID0:
                self.names[tid] = name
        if not has_flows:  # a trace without Paddle's flow events: one pair per correlation id found on both sides
            for corr, launch in launches.items():
                kernel = device_by_corr.get(corr)
                if kernel is None:
                    continue
                fid = self.position * FLOW_ID_STRIDE + int(corr)
                out.append(
                    {
                        "name": "launch",
                        "cat": "async",
                        "ph": "s",
                        "id": fid,
                        "pid": self.pid,
                        "tid": launch["tid"],
                        "ts": launch["ts"],
                    }
                )
                out.append(
                    {
                        "name": "launch",
                        "cat": "async",
                        "ph": "f",
                        "bp": "e",
                        "id": fid,
                        "pid": self.pid,
                        "tid": kernel["tid"],
                        "ts": kernel["ts"],
                    }
                )
                self.flows += 1
        out.extend(self._memory_counters(src))
        self._index_slices()
        return out

    def _index_slices(self) -> None:
        """The slices as sorted columns (kept for slice_at while the other ranks are written)."""
        a = np.array(self.slices, dtype=np.float64).reshape(len(self.slices), 4)
        order = np.argsort(a[:, 0], kind="stable")
        self._ts, self._dur = a[order, 0], a[order, 1]
        self._slice_tid, self._device = a[order, 2].astype(np.int64), a[order, 3].astype(bool)
        self.slices = []

    def _memory_counters(self, src: Iterable[dict]) -> List[dict]:
        out = []
        for ev in src:
            args = ev.get("args") or {}
            if ev.get("ph") == "i" and ev.get("name") == "[memory]" and "current_allocated" in args:
                out.append(
                    {
                        "name": f"memory {args.get('place', '')}",
                        "ph": "C",
                        "pid": self.pid,
                        "ts": (ev["ts"] - self.base_us) - self.shift_us,
                        "args": {
                            "allocated": args.get("current_allocated", 0),
                            "reserved": args.get("current_reserved", 0),
                        },
                    }
                )
        return out

    def slice_at(self, start_unix_ns: int, dur_ns: int) -> Optional[Tuple[float, int]]:
        """(merged ts inside it, tid) of this rank's slice starting within 2 µs of
        ``start_unix_ns`` (its source clock), a GPU stream's before a host thread's, the duration
        nearest ``dur_ns`` first; None when there is none."""
        at = start_unix_ns / 1000.0
        lo = int(np.searchsorted(self._ts, at - 2.0, side="left"))
        hi = int(np.searchsorted(self._ts, at + 2.0, side="right"))
        if hi <= lo:
            return None
        score = [(not self._device[i], abs(self._dur[i] * 1000.0 - dur_ns), i) for i in range(lo, hi)]
        i = min(score)[2]
        ts, dur = float(self._ts[i]), float(self._dur[i])
        return (ts - self.base_us) - self.shift_us + dur / 2.0, int(self._slice_tid[i])

    def metadata(self) -> List[dict]:
        out = [
            {"name": "process_name", "ph": "M", "pid": self.pid, "args": {"name": self.label}},
            {"name": "process_sort_index", "ph": "M", "pid": self.pid, "args": {"sort_index": self.rank}},
            {"name": "process_labels", "ph": "M", "pid": self.pid, "args": {"labels": f"rank {self.rank}"}},
        ]
        for tid, name in sorted(self.names.items()):
            out.append({"name": "thread_name", "ph": "M", "pid": self.pid, "tid": tid, "args": {"name": name}})
            out.append(
                {"name": "thread_sort_index", "ph": "M", "pid": self.pid, "tid": tid, "args": {"sort_index": tid}}
            )
        return out


def collective_flows(matched, writers: Dict[int, "_RankWriter"]) -> Tuple[List[dict], int]:
    """The flow events of every matched instance (an analysis.crossrank.encode.MatchedTable) with two or
    more members among ``writers`` (rank number -> its writer, after its rewrite), and how many chains."""
    out: List[dict] = []
    chains = 0
    if matched is None or not matched.n:
        return out, chains
    ptr = matched.ptr.tolist()
    rank, start, dur, direction = (
        matched.rank.tolist(),
        matched.start.tolist(),
        matched.dur.tolist(),
        matched.dir.tolist(),
    )
    step, kind = matched.step.tolist(), matched.kind.tolist()
    for g in range(matched.n):
        members = [j for j in range(ptr[g], ptr[g + 1]) if rank[j] in writers]
        if len(members) < 2:
            continue
        # senders (P2P_DIRECTION_SEND = 1) before receivers, then by rank
        members.sort(key=lambda j: (0 if direction[j] == 1 else 1, rank[j]))
        points = []
        for j in members:
            w = writers[rank[j]]
            at = w.slice_at(start[j], dur[j])
            if at is not None:
                points.append((w.pid, at[1], at[0], rank[j]))
        if len(points) < 2:
            continue
        name = f"{KIND_NAMES.get(kind[g], 'collective')} step {step[g]}"
        fid = COLLECTIVE_FLOW_ID0 + g
        for n, (pid, tid, ts, r) in enumerate(points):
            ph = "s" if n == 0 else ("f" if n == len(points) - 1 else "t")
            ev = {
                "name": name,
                "cat": "collective",
                "ph": ph,
                "id": fid,
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "args": {"rank": r},
            }
            if ph == "f":
                ev["bp"] = "e"
            out.append(ev)
        chains += 1
    return out, chains


def write_merged_trace(parallel, files, output: str, ranks: Optional[str] = None, matched=None) -> Dict[str, int]:
    """Write the merged trace of the analysed run ``parallel`` (a RunParallel) from its ``files``
    (TraceFiles, as pipeline.batch.load_run used them) to ``output`` (.gz: compressed). ``ranks``:
    "0,2-5" keeps those; ``matched``: the analysis's MatchedTable (its instances drawn as arrows).
    Returns {"ranks", "events", "flows", "collectives"}; ValueError for a --ranks naming none."""
    chosen = parse_ranks(ranks)
    by_name = {f.file_name: f for f in files}
    order = [r for r in parallel.ranks if r.file_name in by_name and (chosen is None or r.rank in chosen)]
    if not order:
        have = ", ".join(str(r.rank) for r in parallel.ranks)
        raise ValueError(f"--ranks {ranks!r}: no such rank in this run (ranks: {have})")
    opener = gzip.open if output.endswith(".gz") else open
    totals = {"ranks": 0, "events": 0, "flows": 0, "collectives": 0}
    writers: Dict[int, _RankWriter] = {}
    first = _read(by_name[order[0].file_name])
    starts = [e["ts"] for e in first["traceEvents"] if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    base_us = int(min(starts, default=0) - order[0].clock_offset_ns / 1000.0) - 1_000_000
    with opener(output, "wt", encoding="utf-8") as out:
        head = {
            "displayTimeUnit": "ms",
            "schemaVersion": "1.0.2",
            "otherData": {
                "run": parallel.run,
                "span": parallel.span,
                "ts_base_unix_us": base_us,
                "clock": "the run's common clock: each rank's times less its host's clock offset",
                "ranks": {
                    str(r.rank): {
                        "label": r.label or r.worker,
                        "file": r.file_name,
                        "clock_offset_ns": r.clock_offset_ns,
                        "pid": i + 1,
                    }
                    for i, r in enumerate(order)
                },
            },
        }
        out.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        sep = ""
        for i, r in enumerate(order):
            writer = _RankWriter(i, r.label or r.worker, r.rank, r.clock_offset_ns, base_us)
            events = writer.rewrite(first if i == 0 else _read(by_name[r.file_name]))
            first = {}  # (the first trace let go)
            for ev in writer.metadata() + events:
                out.write(sep + json.dumps(ev))
                sep = ",\n"
            totals["ranks"] += 1
            totals["events"] += writer.events
            totals["flows"] += writer.flows
            writers[r.rank] = writer
        flows, totals["collectives"] = collective_flows(matched, writers)
        for ev in flows:
            out.write(sep + json.dumps(ev))
            sep = ",\n"
        out.write("\n]}\n")
    return totals
