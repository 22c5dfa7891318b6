"""Keep tests/slow_tests.txt: the tests the fast tier (`pytest -m "not slow"`) leaves out.

    python -m pytest -q --durations=0 > /tmp/durations.log      # the full suite, or the fast tier
    python tools/update_slow_tests.py /tmp/durations.log [--threshold 1.0]

A test is slow when its setup, call and teardown took THRESHOLD seconds or more in that run (summed
over its parametrizations): it is added to the list (tests already listed stay). conftest.py marks the
listed tests, and every browser test, `slow`. The fast tier is meant to finish within 2 minutes on the
2-core machine CI runs on; a module whose shared fixture is costly moves its cost to its next fast test,
so run the fast tier with --durations=0 and update again until it does.
"""
from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

LIST = Path(__file__).resolve().parents[1] / "tests" / "slow_tests.txt"
HEADER = ("# Tests the fast tier leaves out (conftest.py marks them `slow`): measured at 0.5 s or more on the\n"
          "# 2-core machine. Kept by tools/update_slow_tests.py; one test (file::function) a line.\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--threshold", type=float, default=0.5)
    a = ap.parse_args()
    text = Path(a.log).read_text(errors="replace")
    if "slowest durations" not in text:
        raise SystemExit(f"{a.log}: no '--durations' table in it")
    cost = collections.Counter()
    for line in text.split("slowest durations", 1)[1].splitlines():
        m = re.match(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+)", line)
        if m:
            cost[m.group(2).split("[")[0]] += float(m.group(1))
    listed = set()
    if LIST.exists():
        listed = {ln.strip() for ln in LIST.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    new = {t for t, s in cost.items() if s >= a.threshold} - listed
    LIST.write_text(HEADER + "".join(f"{t}\n" for t in sorted(listed | new)))
    print(f"{len(new)} test(s) added, {len(listed | new)} listed in {LIST.name}")


if __name__ == "__main__":
    main()
