"""`tb-paddle-profile diff` of two real Paddle CPU runs of examples/train_gpt.py with different settings.

The baseline runs 1 decoder layer at batch 2, the candidate 2 layers at batch 4. Beside each trace the example
saves what Paddle's own ``Profiler.summary()`` printed; the test reads the Operator Summary Paddle printed for
each run (in ns), subtracts the two, and holds the diff's operator deltas to that: every operator both runs
have, its calls and CPU total; the operators only one run has are marked new or removed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tb_paddle_profile.cli import commands as cli
from tb_paddle_profile.cli.diff import load_diff
from tb_paddle_profile.present.display.export import records
from tb_paddle_profile.present.display.summary import find_table

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_gpt.py"
COMMON = ["--steps", "5", "--hidden", "32", "--heads", "2", "--seq-len", "16", "--vocab", "64", "--cpu"]
SETTINGS = {"baseline": ["--layers", "1", "--batch", "2"], "candidate": ["--layers", "2", "--batch", "4"]}
_ROW = re.compile(r"^(\S.*?)\s{2,}(\d+)\s+([\d.]+) / ([\d.]+|-) / ([\d.]+|-) / ([\d.]+|-) / ([\d.]+)")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    proc = subprocess.run([sys.executable, "-c", "import paddle"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"paddlepaddle is not importable by {sys.executable}")
    out = {}
    for side, extra in SETTINGS.items():
        folder = tmp_path_factory.mktemp(side)
        run = subprocess.run(
            [sys.executable, str(EXAMPLE), "--out", str(folder / "log"), *COMMON, *extra],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        (trace,) = sorted((folder / "log").glob("*.paddle_trace.json"))
        out[side] = trace
    return out


def paddle_operators(trace: Path) -> dict:
    """name -> (calls, CPU total ns) of the top-level rows of the Operator Summary Paddle printed in ns."""
    manifest = json.loads(trace.with_name(trace.name.replace(".paddle_trace.json", ".summaries.json")).read_text())
    entry = next(e for e in manifest["summaries"] if e["time_unit"] == "ns" and e["op_detail"] and not e["thread_sep"])
    text = (trace.parent / entry["file"]).read_text()
    section = text.split("Operator Summary", 1)[1].split("Thread: All threads merged", 1)[1]
    out = {}
    for line in section.splitlines()[1:]:
        if line.startswith("----"):
            break
        m = _ROW.match(line)
        if m and not line.startswith(" "):
            out[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)))
    assert out, f"no operator rows in {entry['file']}"
    return out


def paddle_model(trace: Path) -> dict:
    """name -> (calls, CPU total ns) of the Model Summary Paddle printed in ns (top-level rows)."""
    manifest = json.loads(trace.with_name(trace.name.replace(".paddle_trace.json", ".summaries.json")).read_text())
    entry = next(e for e in manifest["summaries"] if e["time_unit"] == "ns")
    text = (trace.parent / entry["file"]).read_text()
    section = text.split("Model Summary", 1)[1]
    out = {}
    for line in section.splitlines()[5:]:
        if line.startswith("----"):
            break
        m = _ROW.match(line.strip())
        if m:
            out[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)))
    return out


@pytest.mark.slow
def test_operator_deltas_are_paddles_tables_subtracted(traces, tmp_path):
    args = cli.build_parser().parse_args(
        ["diff", str(traces["baseline"]), str(traces["candidate"]), "--cache-dir", str(tmp_path / "cache")]
    )
    result = load_diff(args)
    rows = {r["name"]: r for r in records(find_table(result.display, "operators")) if r["depth"] == 0}
    base, cand = paddle_operators(traces["baseline"]), paddle_operators(traces["candidate"])
    assert set(rows) == set(base) | set(cand)
    for name, r in rows.items():
        if name in base and name in cand:
            assert r["status"] == ""
            assert r["calls_delta"] == cand[name][0] - base[name][0], name
            expected = cand[name][1] - base[name][1]
            # Paddle prints ns with 2 decimals; events beyond 16.8 ms are float32-rounded in the trace
            assert r["cpu_total_ns_delta"] == pytest.approx(expected, rel=1e-5, abs=50), name
        else:
            assert r["status"] == ("new" if name in cand else "removed"), name
    # twice the layers: more operator calls overall (whether the tiny model's step is slower is the
    # machine's timing, not asserted: the deltas are held to Paddle's own Model Summary instead)
    assert sum(r["calls_delta"] for r in rows.values()) > 0
    model = {r["name"]: r for r in records(find_table(result.display, "model"))}
    pb, pc = paddle_model(traces["baseline"]), paddle_model(traces["candidate"])
    assert model["Forward"]["calls_delta"] == pc["Forward"][0] - pb["Forward"][0] == 0
    want = pc["ProfileStep"][1] - pb["ProfileStep"][1]
    assert model["ProfileStep"]["cpu_total_ns_delta"] == pytest.approx(want, rel=1e-5, abs=50)
    step = records(find_table(result.display, "decomposition"))[-1]
    assert step["part"] == "step time"
    per_step = want / pc["ProfileStep"][0]
    assert step["delta_ns"] == pytest.approx(per_step, rel=0.02, abs=1000), (step, per_step)
