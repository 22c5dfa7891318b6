"""Parity on GPU-shaped traces: the CLI against Paddle's own table code.

`python -m tbp_synth --tables` writes hybrid-parallel GPT traces and, beside each,
the tables that Paddle 3.3.1's `profiler_statistic` prints for the generator's original event
trees (not for anything parsed back from the JSON). Short spans (a few ms) keep every time exact
in the file's float32 fields, so the match must be exact; a default-size span (about 170 ms)
loses a few ns per long event to float32, so there the float32-equivalence of tests/support/parity.py
applies.
"""

import json
import subprocess
import sys

import pytest

from support.paths import REPO
from support.parity import compare

pytest.importorskip("paddle", reason="the oracle tables come from Paddle's own table code")


def _generate(out, *args):
    subprocess.run(
        [sys.executable, "-m", "tbp_synth", "--out", str(out), "--tables", *args],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=600,
    )
    cases = []
    for manifest in sorted(out.glob("*.summaries.json")):
        data = json.loads(manifest.read_text())
        trace = out / (manifest.name[: -len(".summaries.json")] + ".paddle_trace.json")
        for entry in data["summaries"]:
            cases.append((trace, entry, out / entry["file"]))
    return cases


def _check(cases, exact):
    failures = []
    for trace, entry, saved in cases:
        cmd = [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "summary",
            str(trace),
            "--sorted-by",
            entry["sorted_by"],
            "--time-unit",
            entry["time_unit"],
        ]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        failure = compare(proc.stdout, saved.read_text(), exact=exact, label=saved.name)
        if failure:
            failures.append(failure)
    assert not failures, f"{len(failures)} of {len(cases)} tables differ:\n\n" + "\n\n".join(failures[:3])


def test_short_8_rank_run_matches_paddle_exactly(tmp_path):
    cases = _generate(
        tmp_path,
        "--dp",
        "2",
        "--mp",
        "2",
        "--pp",
        "2",
        "--steps",
        "2",
        "--layers",
        "2",
        "--micro-batches",
        "2",
        "--hidden",
        "512",
        "--heads",
        "8",
        "--seq-len",
        "256",
    )
    assert len({c[0] for c in cases}) == 8 and len(cases) == 32
    _check(cases, exact=True)


def test_default_size_run_matches_paddle_within_float32(tmp_path):
    cases = _generate(tmp_path, "--dp", "1", "--mp", "2", "--pp", "1", "--steps", "3", "--ranks", "0")
    assert cases
    _check(cases, exact=False)
