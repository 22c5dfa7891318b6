#!/usr/bin/env python3
"""Write tests/data/cell_cases.json: display-model cells and the strings they must print.

The expected strings are computed here with Python's own formatting, the very expressions Paddle's
profiler_statistic and our CLI tables use ('{:.2f}'.format(ns / 1e6), '{:.2f}'.format(ratio * 100),
'{:.1f}%', '{:g}', str(int); a value that prints as zero prints no sign), not with tb_paddle_profile/present/display/cells.py; both formatters (cells.py
and frontend/src/display/cells.ts) are tested against this file (tests/integration/test_display_cells.py).

    python tools/gen_cell_cases.py           # rewrite the file
    python tools/gen_cell_cases.py --check   # exit 1 if it is stale
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "cell_cases.json"
DIV = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": None}


def human(n: int) -> str:
    if not n:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{sign}{n / div:.2f} {unit}"
    return f"{sign}{n} B"


def fixed(x: float, digits: int) -> str:
    """'{:.{d}f}' without the sign of a value that prints as zero ('-0%' read as a loss where there is
    none): Python 3.11's '{:z.{d}f}', spelled out for older Pythons."""
    s = "{:.{}f}".format(x, digits)
    return s[1:] if s.startswith("-") and not s.strip("-0.") else s


def cases():
    rnd = random.Random(18)
    out = []

    def add(kind, number=0.0, text="", missing=False, unit="", digits=0, style="", time_unit="ms", expected=""):
        out.append(
            {
                "format": {"kind": kind, "unit": unit, "digits": digits, "style": style},
                "cell": {"number": number, "text": text, "missing": missing},
                "time_unit": time_unit,
                "expected": expected,
            }
        )

    durations = [
        0,
        1,
        5,
        125,
        2375,
        5000,
        125_000,
        2_375_000,
        1_005_000,
        999_995,
        12_345_678,
        3 * 10**12,
        2**53 - 1,
        -5000,
        -1_250_000,
        15_000_000_000,
        -1,
        -4_999,
        -5_001,
    ]
    durations += [rnd.randrange(0, 10**12) for _ in range(200)]
    durations += [rnd.randrange(0, 10**7) / 7 for _ in range(100)]  # averages: total / calls
    durations += [k / 8 * 1e6 for k in range(1, 64)]  # exact binary ties in ms
    durations += [k / 8 * 1e3 for k in range(1, 64)]  # ... in us
    for ns in durations:
        for unit in ("s", "ms", "us", "ns"):
            div = DIV[unit]
            v = float(ns) if div is None else float(ns) / div
            add("CELL_DURATION", number=float(ns), time_unit=unit, expected=fixed(v, 2))
        add(
            "CELL_DURATION",
            number=float(ns),
            unit="us",
            style="unit",
            time_unit="ms",
            expected=fixed(float(ns) / 1e3, 2) + " us",
        )
    add("CELL_DURATION", missing=True, expected="-")
    add("CELL_DURATION", number=float("inf"), expected="-")
    ratios = [0, 1, 0.5, 0.125, 0.00125, 0.33333333, 2 / 3, 1e-9, 0.999949, 0.0005, 0.015, 0.025, 1.5]
    ratios += [rnd.random() for _ in range(200)] + [k / 64 for k in range(65)]
    ratios += [rnd.randrange(0, 10**9) / rnd.randrange(1, 10**9) for _ in range(100)]
    # changes below what the digits show print no sign ("-0%" beside a compute 0.3 % under its peers')
    ratios += [-0.0026, -0.0049, -0.00004, -0.0, -0.005, -0.0051, -0.25, -1.5]
    for r in ratios:
        for d in (0, 1, 2):
            add("CELL_RATIO", number=r, digits=d, expected=fixed(r * 100, d))
            add("CELL_PERCENT", number=r, digits=d, expected=fixed(r * 100, d) + "%")
    for n in [0, 1, 7, 1023, 1024, 1536, 10**6, 2**20, 3 * 2**30 + 5, 2**40, 2**53 - 1] + [
        rnd.randrange(0, 2**45) for _ in range(100)
    ]:
        add("CELL_COUNT", number=float(n), expected=str(n))
        add("CELL_BYTES", number=float(n), expected=str(n))
        add("CELL_BYTES", number=float(n), style="human", expected=human(n))
    # negative sizes (a slope, reserved − allocated): the magnitude's size with a sign
    for n in [-1, -614, -1023, -1024, -2052, -1774844, -483183820, -(3 * 2**30 + 5)] + [
        -rnd.randrange(1, 2**40) for _ in range(40)
    ]:
        add("CELL_BYTES", number=float(n), style="human", expected=human(n))
    numbers = [
        0,
        1,
        0.5,
        2.5,
        0.125,
        1e-5,
        1.23456789,
        123456.5,
        999999.5,
        1e6,
        1.5e7,
        3.14159,
        0.0001,
        0.00012345,
        -2.5,
        12.0,
        0.3,
        -0.0,
        -0.0004,
        -0.004,
        -0.04,
        -0.4,
        -1e-9,
    ]
    numbers += [rnd.uniform(0, 1000) for _ in range(100)] + [rnd.randrange(0, 64) / 8 for _ in range(40)]
    for x in numbers:
        for d in (0, 1, 2, 3):
            add("CELL_NUMBER", number=x, digits=d, expected=fixed(x, d))
        add("CELL_NUMBER", number=x, style="g", expected="0" if x == 0 else "{:g}".format(x))
    for s in ["", "matmul", "Thread: All threads merged", "名前 ünïcode", "a / b", '<tag> & "q"']:
        add("CELL_TEXT", text=s, expected=s)
    add("CELL_COUNT", missing=True, expected="-")
    add("CELL_TEXT", text="x", missing=True, expected="-")
    return out


def main() -> None:
    # one case per line; infinity as 1e309 (standard JSON that both Python and JavaScript read as inf)
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")).replace("Infinity", "1e309") for c in cases()]
    data = "[\n" + ",\n".join(lines) + "\n]\n"
    if "--check" in sys.argv:
        sys.exit(
            0
            if OUT.exists() and OUT.read_text(encoding="utf-8") == data
            else f"{OUT.name} is stale: run python tools/gen_cell_cases.py"
        )
    OUT.write_text(data, encoding="utf-8")
    print(f"wrote {OUT.relative_to(OUT.parents[2])}: {len(cases())} cases")


if __name__ == "__main__":
    main()
