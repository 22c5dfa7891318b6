"""Reading a Paddle trace's JSON directly, for the tests of analysis/comm_*.py, launch_latency.py and
host_stalls.py: times in ns from args.start_time and dur, as Paddle wrote them, and interval sums in
plain Python (nothing of the package's)."""

import json


def events(path):
    return json.loads(open(path, encoding="utf-8").read())["traceEvents"]


def span(e):
    """(start, end) in ns relative to the trace's origin."""
    start = round(float(e["args"]["start_time"].split()[0]) * 1000)
    return start, start + round(e["dur"] * 1000)


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def measure(intervals):
    return sum(e - s for s, e in union(intervals))


def overlap(a, b):
    """Measure of the intersection of two lists of intervals."""
    total, ub = 0, union(b)
    for s, e in union(a):
        for bs, be in ub:
            total += max(0, min(e, be) - max(s, bs))
    return total


def by_cat(evs, *cats):
    return [e for e in evs if e.get("ph") == "X" and e.get("cat") in cats]


def is_nccl(e):
    return "nccl" in e["name"].lower()


def runtime_by_corr(evs):
    return {e["args"]["correlation id"]: e for e in by_cat(evs, "CudaRuntime")}


def tid_of(e):
    t = e["tid"]
    return int(t.split("(")[0]) if isinstance(t, str) else int(t)
