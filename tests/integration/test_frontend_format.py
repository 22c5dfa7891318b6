"""The panels format numbers exactly as Python's ``'%.2f'`` (Paddle's and the CLI's tables) does.

JavaScript's toFixed rounds exact ties away from zero, Python keeps the even neighbour; frontend/src/format.ts
(labels outside the tables, through display/cells.ts) fixes that up. This test compiles format.ts with the
frontend's own esbuild and runs it in Node over values that include every kind of tie and times in each
unit, and compares with Python. Table cells are display/cells.ts's, tested by test_display_cells.py.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTEND = REPO / "frontend"
ESBUILD = FRONTEND / "node_modules" / ".bin" / "esbuild"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not ESBUILD.exists(),
    reason="needs Node.js and `npm ci` in frontend/",
)

DIV = {"s": 1e9, "ms": 1e6, "us": 1e3}


def python_time(ns: int, unit: str) -> str:
    value = float(ns)
    if unit in DIV:
        value /= DIV[unit]
    return "{:.2f}".format(value)


def run_format(calls: list) -> list:
    """Evaluates [function, args] pairs with format.ts in Node."""
    bundle = subprocess.run(
        [str(ESBUILD), str(FRONTEND / "src" / "format.ts"), "--bundle", "--format=cjs", "--platform=node"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    script = (
        bundle + "\nconst f = module.exports;\nconst calls = JSON.parse(process.argv[1]);\n"
        "process.stdout.write(JSON.stringify(calls.map(([fn, args]) => f[fn](...args))));\n"
    )
    out = subprocess.run(["node", "-e", script, json.dumps(calls)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_times_and_ratios_print_like_python():
    rng = random.Random(7)
    ties = [125_000, 375_000, 625_000, 2_375_000, 1_125, 5, 15, 25, 35, 0, 1]
    nanos = ties + [rng.randrange(0, 10**12) for _ in range(400)] + [rng.randrange(0, 2000) for _ in range(200)]
    units = ["s", "ms", "us", "ns"]
    cases = [("fmtTime", [ns, unit]) for ns in nanos for unit in units]
    expected = [python_time(ns, unit) for ns in nanos for unit in units]
    # (ratio cells: display/cells.ts's formatValue, tested on tests/data/cell_cases.json by test_display_cells.py)
    values = [0.125, 0.375, 2.5, 0.005, 1.005, -0.125, -2.675, 1e-9, -1e-9, 123456.785, 0.0, 99.995]
    cases += [("fixed2", [v]) for v in values]
    # a value that prints as zero prints no sign: -1e-9 is "0.00", not "-0.00" (as cells.py and cells.ts)
    expected += ["{:.2f}".format(v).replace("-0.00", "0.00") for v in values]
    cases += [("fmtTime", [-1, "ms"]), ("fmtTime", [-4_999, "ms"]), ("fmtTime", [-5_001, "us"])]
    expected += ["0.00", "0.00", "-5.00"]
    got = run_format(cases)
    wrong = [(c, g, e) for c, g, e in zip(cases, got, expected) if g != e]
    assert not wrong, wrong[:10]
    assert run_format([("fmtTime", [])]) == ["-"]  # no value (an item without calls) prints "-"
