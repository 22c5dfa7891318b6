"""Kernel names shortened to their cell never look alike (issue 26.6: "distinct truncation of kernel names, keep
the distinguishing tail"): frontend/src/display/abbrev.ts compiled with the frontend's esbuild and run in Node on
the names a run of the generator holds (tbp_synth's Hopper cuBLAS GEMMs share their first 36 and last 40
characters, its NCCL kernels their first 14), in cells of a few widths (a width: so many characters).

At 1,280 px the Compare view's kernels table gives its name column about 23 characters: the three GEMMs read
"sm90_xmma_gemm_bf16bf1…" alike there (the Kernels panel's wider column had them apart)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTEND = REPO / "frontend"
ESBUILD = FRONTEND / "node_modules" / ".bin" / "esbuild"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not ESBUILD.exists(), reason="needs Node.js and `npm ci` in frontend/"
)


def kernel_names() -> list:
    """Every kernel name of a generated run's rank 0 (its trace JSON)."""
    from tbp_synth import SynthConfig, generate
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        generate(SynthConfig(dp=2, mp=2, pp=1, layers=1, micro_batches=1, steps=1), out)
        (trace,) = Path(out).glob("rank0_*.paddle_trace.json")
        doc = json.loads(trace.read_text())
    # Paddle writes a kernel's duration after its name ("…_cublas[1.262 ms]"); the tables show the name
    return sorted({re.sub(r"\[[\d.]+ \w+\]$", "", e["name"]) for e in doc["traceEvents"] if e.get("cat") == "Kernel"})


def abbreviated(names: list, chars: int) -> list:
    bundle = subprocess.run(
        [str(ESBUILD), str(FRONTEND / "src" / "display" / "abbrev.ts"), "--bundle", "--format=cjs", "--platform=node"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    script = (
        bundle + "\nconst [names, chars] = JSON.parse(process.argv[1]);\n"
        "const at = module.exports.partingPoints(names);\n"
        "process.stdout.write(JSON.stringify(names.map((n) => module.exports.abbreviate(n, at.get(n) || 0, (t) => t.length <= chars))));\n"
    )
    out = subprocess.run(["node", "-e", script, json.dumps([names, chars])], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("chars", [14, 18, 23, 30, 46])
def test_shortened_kernel_names_stay_distinct(chars):
    names = kernel_names()
    gemms = [n for n in names if n.startswith("sm90_xmma_gemm_")]
    assert len(gemms) == 3 and len(names) > 8
    got = abbreviated(names, chars)
    assert all(len(g) <= chars for g in got), got
    assert len(set(got)) == len(names), [g for g in got if got.count(g) > 1]
    for name, short in zip(names, got):  # what is shown is the name's, around its "…"
        assert all(part in name for part in short.split("…")), (name, short)
