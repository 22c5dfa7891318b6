"""The vectorised nesting equals the plain stack sweep that Paddle's rule describes.

The sweep below is the rule of docs/trace-format.md §4, written as directly as
possible: one thread at a time, events sorted by (start asc, end desc), a stack of open host
events. The engine's `nest` climbs parent chains with numpy instead; both must agree event for
event on every trace we have.
"""

import numpy as np
import pytest

from support.paths import REPO, trace_folders
from tb_paddle_profile.trace.event_tree import _float32_tolerance, build_tree, nest
from tb_paddle_profile.trace.reader import read_trace


def stack_sweep(t):
    n_host = len(t.host.tid)
    tol = _float32_tolerance(t.host.end)
    parent = np.full(n_host, -1)
    owner = np.full(len(t.runtime.tid), -1)
    starts = np.concatenate([t.host.start, t.runtime.start])
    ends = np.concatenate([t.host.end, t.runtime.end])
    kinds = np.concatenate([np.zeros(n_host), np.ones(len(t.runtime.tid))])
    tids = np.concatenate([t.host.tid, t.runtime.tid])
    stack, current = [], None
    for idx in np.lexsort((kinds, -ends, starts, tids)).tolist():
        if tids[idx] != current:
            stack, current = [], tids[idx]
        s, e = starts[idx], ends[idx]
        if idx < n_host:
            while stack and not (s < ends[stack[-1]] and e <= ends[stack[-1]] + tol[stack[-1]]):
                stack.pop()
            parent[idx] = stack[-1] if stack else -1
            stack.append(idx)
        else:
            inside = [h for h in stack if starts[h] <= s < ends[h] and e <= ends[h] + tol[h]]
            owner[idx - n_host] = inside[-1] if inside else -1
    return parent, owner


def _traces():
    found = [t for d in trace_folders() for t in sorted(d.glob("*.paddle_trace.json"))]
    return found + sorted((REPO / "examples" / "profiler_log").rglob("*.paddle_trace.json"))


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "lexsort"])
@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_nesting_matches_the_stack_sweep(monkeypatch, path, packed):
    """packed: (thread, start) as one int64 key; lexsort: the path taken when that would
    overflow (many threads times a very long span)."""
    from tb_paddle_profile.trace import event_tree

    if not packed:
        monkeypatch.setattr(event_tree, "_pack_thread_start", lambda *a: None)
    t = read_trace(path.read_bytes(), path.name)
    parent, owner = nest(
        t.host.tid,
        t.host.start,
        t.host.end,
        _float32_tolerance(t.host.end),
        t.runtime.tid,
        t.runtime.start,
        t.runtime.end,
    )
    ref_parent, ref_owner = stack_sweep(t)
    assert (parent == ref_parent).all()
    assert (owner == ref_owner).all()
    assert (parent >= 0).sum() > len(parent) / 2  # the trace really nests


def test_packed_key_refuses_what_would_overflow():
    from tb_paddle_profile.trace.event_tree import _pack_thread_start

    tid = np.array([1, 2, 3], dtype=np.int64)
    start = np.array([0, 1, 2**61], dtype=np.int64)
    assert _pack_thread_start(tid, start, tid[:1], start[:1]) is None
    assert _pack_thread_start(tid[:2], start[:2], tid[:1], start[:1]) is not None


def test_walk_is_paddles_stack_order(shared_traces):
    path = sorted((shared_traces / "cpu-gpt-single").glob("*.paddle_trace.json"))[0]
    tree = build_tree(read_trace(path.read_bytes(), path.name))
    for tid in tree.threads:
        expected = []
        stack = list(tree.root_children[tid].tolist())
        while stack:
            row = stack.pop()
            expected.append(row)
            stack.extend(tree.children(row).tolist())
        assert tree.walk[tid].tolist() == expected
