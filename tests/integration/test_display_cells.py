"""The display model's two cell formatters (Python's display/cells.py, the panels' display/cells.ts)
print the strings Python's own formatting gives (tests/data/cell_cases.json, tools/gen_cell_cases.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tb_paddle_profile.present.display import cells
from tb_paddle_profile.v1 import display_pb2 as dpb

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "data" / "cell_cases.json"
FRONTEND = REPO / "frontend"


def _cases():
    return json.loads(CASES.read_text(encoding="utf-8"))


def test_cases_file_is_fresh():
    subprocess.run(["python", str(REPO / "tools" / "gen_cell_cases.py"), "--check"], check=True)


def test_python_formatter_prints_pythons_strings():
    cases = _cases()
    assert len(cases) > 5000
    bad = []
    for c in cases:
        f = c["format"]
        fmt = dpb.Format(kind=dpb.CellKind.Value(f["kind"]), unit=f["unit"], digits=f["digits"], style=f["style"])
        cell = dpb.Cell(**c["cell"])
        got = cells.format_value(fmt, cell, c["time_unit"])
        if got != c["expected"]:
            bad.append((c, got))
    assert not bad, bad[:5]


def test_typescript_formatter_prints_the_same_strings(tmp_path):
    esbuild = FRONTEND / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists() or not shutil.which("node"):
        pytest.skip("the frontend toolchain is not installed (cd frontend && npm ci)")
    out = tmp_path / "cell_cases.mjs"
    subprocess.run(
        [
            str(esbuild),
            str(FRONTEND / "tests" / "cell_cases.ts"),
            "--bundle",
            "--platform=node",
            "--format=esm",
            f"--outfile={out}",
            "--log-level=warning",
        ],
        check=True,
        cwd=FRONTEND,
    )
    got = json.loads(subprocess.run(["node", str(out), str(CASES)], check=True, capture_output=True, text=True).stdout)
    cases = _cases()
    assert len(got) == len(cases)
    bad = [(c, g) for c, g in zip(cases, got) if g != c["expected"]]
    assert not bad, bad[:5]


def test_sentence_text_joins_spans_with_values_formatted():
    s = cells.sentence(
        [
            "rank ",
            cells.rank(5, "5 (dp1 pp0)"),
            " waits ",
            cells.val(2_375_000, cells.DURATION, style="unit"),
            " per step (",
            cells.val(0.125, cells.PERCENT, digits=1),
            ")",
        ]
    )
    assert cells.sentence_text(s, "ms") == "rank 5 (dp1 pp0) waits 2.38 ms per step (12.5%)"
    assert cells.sentence_text(s, "us") == "rank 5 (dp1 pp0) waits 2375.00 us per step (12.5%)"
