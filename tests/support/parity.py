"""Comparing our text tables with the ones Paddle printed.

Exact comparison is the rule. One loss is in the trace format itself: Paddle
writes durations as float32 microseconds, so an event longer than 2**24 ns
(16.8 ms) is stored to within 8-64 ns, and a sum or extreme of such events,
printed in us or ns, can differ from Paddle's own in the last digits
(docs/parity.md). `float32_equivalent` accepts exactly that and nothing else:
the same words, the same integers, decimals within 1e-4 relative plus one unit
in the last printed place.
"""

from __future__ import annotations

import difflib
import re
from typing import List, Optional

_NUMBER = re.compile(r"-?\d+\.\d+|-?\d+")


def normalise(text: str) -> List[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def float32_equivalent(ours: str, paddle: str) -> bool:
    if ours == paddle:
        return True
    words_a = _NUMBER.split(ours)
    words_b = _NUMBER.split(paddle)
    if [w.split() for w in words_a] != [w.split() for w in words_b]:
        return False
    nums_a, nums_b = _NUMBER.findall(ours), _NUMBER.findall(paddle)
    if len(nums_a) != len(nums_b):
        return False
    for a, b in zip(nums_a, nums_b):
        if a == b:
            continue
        if "." not in a or "." not in b:
            return False  # calls, counts and byte sizes must be exact
        x, y = float(a), float(b)
        if abs(x - y) > 1e-4 * max(abs(x), abs(y)) + 0.0100001:
            return False
    return True


def compare(actual_text: str, expected_text: str, exact: bool = True, label: str = "") -> Optional[str]:
    """None when equal (or float32-equivalent line by line when not exact), else a readable diff."""
    actual, expected = normalise(actual_text), normalise(expected_text)
    if actual == expected:
        return None
    if not exact and len(actual) == len(expected) and all(float32_equivalent(a, b) for a, b in zip(actual, expected)):
        return None
    diff = list(
        difflib.unified_diff(expected, actual, fromfile=f"paddle {label}", tofile=f"ours {label}", lineterm="", n=1)
    )
    return "\n".join(diff[:150]) + (f"\n... {len(diff) - 150} more lines" if len(diff) > 150 else "")
